"""Live mirrors beside a trainer: a failing mirror warns once and neither stops nor slows the run; a real
`dhpo-suite train --logger tensorboard,wandb` leaves events equal to its run directory."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from dhpo_suite.runs import RunReader
from dhpo_suite.tracking import open_live
from dhpo_suite.tracking.mirrors import parse_loggers
from tests.tracking import readback, wandb_records


def _records(run):
    reader = RunReader(run)
    return reader, [reader.record(s) for s in reader.steps()]


def test_wandb_import_error_warns_once_and_tensorboard_goes_on(synthetic_run, monkeypatch):
    run = synthetic_run(steps=5)
    reader, records = _records(run)
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` raises ImportError, as when not installed
    warnings = []
    with open_live(run, reader.manifest, "wandb,tensorboard", warn=warnings.append) as mirrors:
        for r in records:
            mirrors.submit(r)
    assert len(warnings) == 1 and "wandb mirror switched off: ModuleNotFoundError" in warnings[0]
    assert "pip install wandb" in warnings[0]
    assert f"dhpo-suite export {run} --to wandb" in warnings[0]
    readback.assert_tensorboard_matches(readback.tensorboard_events(run.parent / "tensorboard" / run.name), run)


class _Failing:
    """A mirror whose every step raises (a full disk, a dropped connection)."""

    name = "tensorboard"

    def __init__(self):
        self.calls = 0

    def start(self, manifest):
        pass

    def log_step(self, record, samples=False):
        self.calls += 1
        raise OSError("No space left on device")

    def close(self):
        pass


def test_a_mirror_failing_every_step_is_switched_off_after_one_warning(synthetic_run):
    run = synthetic_run(steps=4)
    reader, records = _records(run)
    failing, warnings = _Failing(), []
    with open_live(run, reader.manifest, "tensorboard", warn=warnings.append, make=lambda name: failing) as m:
        for r in records:
            m.submit(r)
    assert failing.calls == 1 and len(warnings) == 1 and "OSError: No space left on device" in warnings[0]


def test_no_network_does_not_block_submit(synthetic_run, monkeypatch):
    """Online W&B with a key but no server: wandb.init waits, then fails, on the mirror thread only."""
    run = synthetic_run(steps=3)
    reader, records = _records(run)
    monkeypatch.setenv("WANDB_MODE", "online")
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("WANDB_INIT_TIMEOUT", "5")
    import wandb  # noqa: F401 - imported beforehand: time the wait for the start alone

    warnings = []
    t0 = time.perf_counter()
    mirrors = open_live(run, reader.manifest, "wandb", warn=warnings.append, start_timeout=0.5)
    opened_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for r in records:
        mirrors.submit(r)
    submit_s = time.perf_counter() - t0
    assert not warnings  # wandb.init is still trying to connect
    mirrors.close()
    wandb.teardown()  # wandb keeps the online settings process-wide: later tests must not inherit them
    assert opened_s < 0.5 + 2.0, opened_s  # the wait for the start is bounded by start_timeout
    assert submit_s < 0.05, submit_s  # three queue puts, while wandb.init is still trying to connect
    assert len(warnings) == 1 and "wandb mirror switched off" in warnings[0]


def test_logger_option_values():
    assert parse_loggers("none") == () and parse_loggers("tensorboard") == ("tensorboard",)
    assert parse_loggers("tensorboard, wandb,tensorboard") == ("tensorboard", "wandb")
    for bad in ("mlflow", "none,wandb", "tensorboard,comet"):
        with pytest.raises(ValueError, match="is not one of: none, tensorboard, wandb"):
            parse_loggers(bad)


def test_train_rejects_an_unknown_logger(tmp_path):
    from typer.testing import CliRunner

    from dhpo_suite.cli import app

    result = CliRunner().invoke(app, ["train", "--logger", "mlflow", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--logger: mlflow is not one of" in result.output
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_train_with_loggers_mirrors_every_step(tmp_path):
    """The user's path: a real short embedded run (the default tiny model) with both mirrors on."""
    out = tmp_path / "runs" / "tiny"
    args = ["--logger", "tensorboard,wandb", "--steps", "2", "--prompts-per-step", "4", "--group-size", "4",
            "--eval-every", "0", "--eval-prompts", "4", "--checkpoint-every", "2", "--out", str(out),
            "--no-progress"]
    proc = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "train", *args], capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "warning" not in proc.stderr.lower(), proc.stderr[-3000:]
    assert RunReader(out).steps() == [1, 2]
    acc = readback.tensorboard_events(tmp_path / "runs" / "tensorboard" / "tiny")
    readback.assert_tensorboard_matches(acc, out)
    assert {"clip/token/binding", "clip/sequence/binding", "clip/mixed/binding", "time/update_s"} <= set(
        acc.Tags()["scalars"])
    assert readback.tensorboard_manifest(acc)["algorithm"] == "dhpo-e"
    offline = wandb_records.offline_run(tmp_path / "runs")
    readback.assert_wandb_matches(wandb_records.history(offline), out)
    assert wandb_records.config(offline)["config"]["logger"] == "tensorboard,wandb"


def test_wandb_runs_offline_unless_a_key_is_configured(monkeypatch, tmp_path):
    from dhpo_suite.tracking.wandb_run import default_mode

    monkeypatch.delenv("WANDB_MODE")
    netrc = tmp_path / "netrc"
    netrc.write_text("machine example.org login user password secret\n")
    monkeypatch.setenv("NETRC", str(netrc))
    assert default_mode() == "offline"
    netrc.write_text("machine api.wandb.ai login user password " + "k" * 40 + "\n")  # what `wandb login` writes
    netrc.chmod(0o600)
    assert default_mode() == "online"
    monkeypatch.setenv("WANDB_MODE", "disabled")
    assert default_mode() == "disabled"
