"""The dashboard's Sweep page on a folder of runs across seeds (Streamlit AppTest, the real app): the
intervals it shows are those of dhpo_suite.science.compare, whose values test_compare.py checks by hand."""

from __future__ import annotations

import sys

import pytest

from dhpo_suite.dashboard.registry import PAGES
from tests.dashboard.dash_helpers import figure, no_errors, open_page, texts, trace
from tests.science.test_compare import flat, write_run


@pytest.fixture(scope="module")
def sweep_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    for seed, v in enumerate([0.2, 0.4, 0.6]):
        write_run(root / f"grpo-s{seed}", "grpo", seed, {0: 0.0, 20: v / 2, 40: v}, flat(1.0), flat(20.0))
        write_run(root / f"dhpo-e-branch-s{seed}", "dhpo-e", seed, {0: 0.0, 20: v / 2, 40: v + 0.1}, flat(1.0),
                  flat(20.0), clip="branch", status="completed" if seed else "running")
    return root


def test_sweep_page_is_registered():
    assert "sweep.py" in [p.file for p in PAGES]


def test_sweep_page_shows_intervals_differences_and_bands(sweep_root, monkeypatch):
    at = open_page(monkeypatch, sweep_root, "sweep.py")
    at.button(key="sweep_all").click().run()  # the page compares the runs picked in the sidebar: all six
    no_errors(at)
    summary = at.table[0].value.T  # shown with groups as columns
    assert list(summary.index) == ["dhpo-e-branch", "grpo"]
    assert summary.loc["grpo", "final_reward"].startswith("0.400 [")
    diffs = at.table[1].value.T
    assert diffs.loc["dhpo-e-branch", "final_reward"] == "0.100 [0.100, 0.100]"  # +0.1 at every seed
    assert diffs.loc["dhpo-e-branch", "seeds"] == "0,1,2"
    assert "1 runs not completed" in texts(at) and "dhpo-e-branch-s0" in texts(at)
    fig = figure(at, "Held-out reward across seeds")
    mean = trace(fig, "grpo")
    assert list(mean["x"]) == [0, 20, 40] and list(mean["y"]) == pytest.approx([0.0, 0.2, 0.4])


def test_sweep_page_does_not_import_torch():
    import subprocess

    code = ("import sys;"
            "import dhpo_suite.science.compare, dhpo_suite.science.tables, dhpo_suite.dashboard.data;"
            "assert 'torch' not in sys.modules, 'torch imported'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
