"""`dhpo-suite compare` judges only the registered grid (dhpo_suite.science.grid), and a sweep directory holds a
lock (dhpo_suite.train.sweep.lock): a deleted run, a run copied under another name or over another cell, and a
non-finite held-out reward are named before any verdict and refused (or left out, as the registration says); a
second `sweep` on a running sweep's directory is refused in one line without touching its logs."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys

import pytest

from dhpo_suite.science.analysis import analyse
from dhpo_suite.science.grid import registered_cells
from dhpo_suite.train import sweep as sw
from tests.science.test_compare import flat, write_run
from tests.science.test_contrasts import PREREG, make_sweep

REFUSED = "no verdict: the grid is not the registered one"


def compare(root) -> str:
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(root)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "COLUMNS": "250"})
    assert out.returncode == 0, out.stderr
    return " ".join(out.stdout.split())


def named_before_verdicts(text: str, line: str) -> None:
    assert line in text, text
    assert text.index(line) < text.index("Verdicts")


def test_registered_cells_are_the_sweeps_cells(tmp_path):
    grid = sw.Sweep(("grpo", "dhpo-e", "gspo"), ("branch", "unified"), (0, 3), (), 10)
    sw.load_or_create(tmp_path, grid)
    sw.load_or_create(tmp_path / "sub", sw.Sweep(("dhpo-a",), (), (1,), (), 10))
    names = [c.run for c in registered_cells(tmp_path)]
    assert names == [c.name for c in grid.cells()] + ["sub/dhpo-a-s1"]
    assert registered_cells(tmp_path / "sub" / "nothing") is None


def test_a_complete_grid_is_said_to_be_complete(tmp_path):
    a = analyse(make_sweep(tmp_path / "s"))
    assert a.checks.lines[0] == "grid: each of the 24 registered cells has one completed run of its own"
    assert a.contrasts.set_index("name").loc["accuracy", "verdict"].startswith("reproduced")


def test_a_registered_sweep_with_every_run_gone_is_one_line(tmp_path):
    root = make_sweep(tmp_path / "s")
    for run in root.iterdir():
        if run.is_dir():
            shutil.rmtree(run)
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(root)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2 and out.stderr.strip() == f"error: {root}: no run with committed steps", out.stderr


def test_a_deleted_run_is_named_and_no_verdict_is_given(tmp_path):
    root = make_sweep(tmp_path / "s")
    shutil.rmtree(root / "dhpo-e-branch-s3")
    text = compare(root)
    named_before_verdicts(text, "grid: registered cell dhpo-e-branch-s3 (dhpo-e seed 3) has no run (never run, or "
                                "deleted)")
    assert f"- accuracy: {REFUSED} (1 cell(s) at fault: dhpo-e-branch-s3;" in text
    assert "- side: exploratory" in text  # exploratory contrasts keep their numbers, as before


def test_a_run_copied_under_another_name_is_named_and_left_out(tmp_path):
    root = make_sweep(tmp_path / "s")
    before = analyse(root).contrasts
    shutil.copytree(root / "grpo-s0", root / "grpo-s9")
    text = compare(root)
    named_before_verdicts(text, "grid: grpo-s9 (grpo seed 0) is outside the registration (no sweep.json names it): "
                                "not read by the checks or contrasts")
    named_before_verdicts(text, "grid: grpo seed 0 is seen 2 times (grpo-s0, grpo-s9): a run copied under another "
                                "name would count its seed twice")
    after = analyse(root).contrasts  # the copy is not read: the registered verdicts stand
    assert after["verdict"].tolist() == before["verdict"].tolist() and after["n"].tolist() == before["n"].tolist()


def test_a_run_copied_over_another_cell_is_named_and_refused(tmp_path):
    root = make_sweep(tmp_path / "s")
    shutil.rmtree(root / "grpo-s1")
    shutil.copytree(root / "grpo-s0", root / "grpo-s1")
    a = analyse(root)
    assert ("grid: grpo-s1 holds grpo seed 0 (its manifest), not the cell's grpo seed 1: a run copied over "
            "another?") in a.checks.lines
    assert "grid: grpo seed 0 is seen 2 times (grpo-s0, grpo-s1): a run copied under another name would count its " \
           "seed twice" in a.checks.lines
    assert a.contrasts.set_index("name").loc["accuracy", "verdict"].startswith(REFUSED)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_non_finite_heldout_reward_is_named_and_refused(tmp_path, value):
    root = make_sweep(tmp_path / "s")
    shutil.rmtree(root / "grpo-s2")
    write_run(root / "grpo-s2", "grpo", 2, {0: 0.2, 40: value}, flat(1.0), flat(20.0), hparams={"eps_high": 0.2})
    a = analyse(root)
    named = [line for line in a.checks.lines if line.startswith("grid: grpo-s2 has a non-finite")]
    assert named and "eval/heldout_reward" in named[0], a.checks.lines
    assert a.contrasts.set_index("name").loc["accuracy", "verdict"].startswith(REFUSED)


def test_the_registration_may_say_exclude(tmp_path):
    root = make_sweep(tmp_path / "s", {**PREREG, "grid": "exclude"})
    shutil.rmtree(root / "dhpo-e-branch-s3")
    a = analyse(root)
    assert ("grid: as registered (grid: exclude), 1 run(s) at fault are left out of the checks and contrasts "
            "(dhpo-e-branch-s3); the contrasts pair over the seeds left") in a.checks.lines
    row = a.contrasts.set_index("name").loc["accuracy"]
    assert row["seeds"] == [0, 1, 2, 4, 5] and row["verdict"].startswith(("reproduced", "inconclusive"))


def test_an_unknown_grid_policy_is_refused_at_registration(tmp_path):
    from dhpo_suite.science.prereg import PreregError, parse

    with pytest.raises(PreregError, match="grid: 'drop' is not one of refuse, exclude"):
        parse(json.dumps({**PREREG, "grid": "drop"}).encode(), "p.json", ("final_reward", "late_entropy"))


def test_a_second_sweep_on_a_running_sweeps_directory_is_refused_in_one_line(tmp_path):
    out = tmp_path / "sweep"
    grid = sw.Sweep(("grpo",), (), (0,), ("--steps", "2"), 2)
    sw.load_or_create(out, grid)
    (out / "logs").mkdir()
    (out / "logs" / "grpo-s0.log").write_text("the first sweep's run\n")
    held = sw.lock(out)  # the running sweep; the second one below is its child, refused all the same
    try:
        r = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "sweep", str(out), "--no-progress"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"error: {out}: another `dhpo-suite sweep` is running on "
                                                       f"this directory (pid {os.getpid()} on {platform.node()} since ")
        with pytest.raises(sw.SweepError, match="another `dhpo-suite sweep` is running"):
            sw.run_sweep(out, grid, workers=1)
        assert (out / "logs" / "grpo-s0.log").read_text() == "the first sweep's run\n"
        assert sorted(p.name for p in (out / "logs").iterdir()) == ["grpo-s0.log"]
    finally:
        held.release()
    sw.lock(out).release()  # released with its holder: no stale lock
