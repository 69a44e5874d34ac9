"""`dhpo-suite dashboard` argument handling (the server itself is started by test_browser.py)."""

import typer
from typer.testing import CliRunner

from dhpo_suite.dashboard.cli import APP, register, streamlit_argv


def invoke(*args):
    app = typer.Typer()
    app.callback()(lambda: None)  # a group, so the command keeps its name as in the real router
    register(app)
    return CliRunner().invoke(app, ["dashboard", *args])


def test_missing_runs_directory_is_a_clear_error(tmp_path):
    out = invoke(str(tmp_path / "nope"), "--headless")
    assert out.exit_code == 2
    assert "does not exist" in out.output and "nope" in out.output


def test_help_names_the_options():
    out = invoke("--help")
    assert out.exit_code == 0
    for option in ("RUNS_DIR", "--port", "--headless", "--address"):
        assert option in out.output


def test_streamlit_command_line():
    argv = streamlit_argv(8600, True, "127.0.0.1")
    assert argv[1:5] == ["-m", "dhpo_suite.dashboard.serve", "run", str(APP)]
    flags = dict(zip(argv[5::2], argv[6::2]))
    assert flags["--server.port"] == "8600" and flags["--server.headless"] == "true"
    assert flags["--server.address"] == "127.0.0.1" and flags["--browser.gatherUsageStats"] == "false"


def test_the_dashboard_process_never_imports_torch_vllm_or_verl():
    import subprocess
    import sys

    code = ("import sys; from dhpo_suite.dashboard import serve; serve.preload(); "
            "import dhpo_suite.dashboard.controls, dhpo_suite.dashboard.data; "
            "print(sorted(m for m in ('torch', 'vllm', 'verl') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_the_server_freezes_its_imports_out_of_the_collection_after_each_run():
    """Streamlit collects garbage after every script run; the server's import-time objects (pandas, Plotly,
    Streamlit) are frozen, so that collection visits only what the runs themselves created."""
    import subprocess
    import sys

    code = ("import gc; from dhpo_suite.dashboard import serve; serve.prepare(); "
            "print(gc.get_freeze_count(), len(gc.get_objects()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    frozen, tracked = map(int, out.stdout.split())
    assert frozen > 100_000 and tracked < frozen / 50, (frozen, tracked)


def test_browser_test_fails_in_ci_and_skips_elsewhere_without_chromium(monkeypatch, tmp_path):
    import pytest

    from tests.dashboard import test_browser

    monkeypatch.setattr(test_browser, "CHROMIUM", tmp_path / "no-chromium")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="make browser"):
        test_browser.require_chromium()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception):
        test_browser.require_chromium()
