"""`dhpo-suite sweep` end to end with the real trainer: a 2-objective x 2-seed grid, stopped (SIGTERM to the sweep;
its runs close as "interrupted") and then killed (SIGKILL, the whole sweep) once a run is half-way past a
checkpoint, then re-run: completed runs are skipped, the killed run resumes from its checkpoint, and every run of
a seed saw the same first rollout. Then `dhpo-suite compare` and the dashboard's Sweep page on it.

Kept cheap: a random-init "warm start" (--sft-target 0), 2 prompts x G 2, 8 new tokens (~1 min in all)."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dhpo_suite.runs import RunReader

STEPS = 6
TRAIN = ["--steps", str(STEPS), "--prompts-per-step", "2", "-G", "2", "--eval-prompts", "4", "--max-new-tokens", "8",
         "--checkpoint-every", "2", "--eval-every", "3", "--sft-target", "0", "--hp", "eps_high=0.3"]


PREREG = {"version": 1, "primary_metric": "final_reward", "contrasts": [
    {"name": "accuracy", "arm": "dhpo-e-branch", "baseline": "grpo", "direction": "greater"}]}


def sweep_cmd(out: Path) -> list[str]:
    prereg = out.parent / "prereg-in.json"
    prereg.write_text(json.dumps(PREREG))
    return [sys.executable, "-m", "dhpo_suite.cli", "sweep", str(out), "--algos", "grpo,dhpo-e", "--seeds", "2",
            "--workers", "2", "--no-progress", *TRAIN, "--prereg", str(prereg)]


def processes_writing(out: Path) -> list[int]:
    """Pids whose command line names the sweep directory (the sweep and its `train` children)."""
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if str(out).encode() in (d / "cmdline").read_bytes():
                    pids.append(int(d.name))
            except OSError:
                continue
    return pids


def wait_for_half_done_run(out: Path, proc: subprocess.Popen, timeout: float = 240) -> str:
    """A cell with a complete checkpoint whose run is still going."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the sweep finished before a run could be caught half-way"
        for run in out.glob("*-s[0-9]"):
            manifest = run / "manifest.json"
            if (run / "checkpoints" / "step-000002" / "COMPLETE").exists() and manifest.exists():
                if json.loads(manifest.read_text())["status"] == "running":  # written atomically
                    return run.name
        time.sleep(0.05)
    raise AssertionError("no run reached its first checkpoint in time")


@pytest.mark.slow  # a sweep of real trainings, SIGKILLed and resumed
@pytest.mark.timeout(600)
def test_sweep_kill_resume_and_paired_first_rollout(tmp_path, monkeypatch):
    out = tmp_path / "sweep"
    # SIGTERM (a scheduler's stop) to the sweep alone: it stops its cells as Ctrl-C does, and each closes its run
    # as "interrupted", naming the signal (the default action would leave them "running", killed by PDEATHSIG).
    stopped = subprocess.Popen(sweep_cmd(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)
    caught = wait_for_half_done_run(out, stopped)
    stopped.send_signal(signal.SIGTERM)
    said = stopped.communicate(timeout=60)[0]
    assert stopped.returncode == 128 + signal.SIGTERM, said
    assert said.rstrip().splitlines()[-1].startswith("interrupted (SIGTERM): the running cells were stopped"), said
    caught_manifest = RunReader(out / caught).manifest
    assert (caught_manifest.status, caught_manifest.error) == ("interrupted", "SIGTERM")
    assert "interrupted (SIGTERM): the run keeps its last checkpoint" in (out / "logs" / f"{caught}.log").read_text()
    assert processes_writing(out) == []

    first = subprocess.Popen(sweep_cmd(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    killed = wait_for_half_done_run(out, first)
    os.killpg(first.pid, signal.SIGKILL)  # the sweep's own group; its runs die with it (PR_SET_PDEATHSIG)
    first.wait()
    deadline = time.monotonic() + 20
    while processes_writing(out) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert processes_writing(out) == [], "a run outlived its killed sweep"
    manifests = [r / "manifest.json" for r in out.glob("*-s[0-9]")]  # a run killed in its warm-start has none
    before = {m.parent.name: m.stat().st_mtime_ns for m in manifests
              if m.exists() and json.loads(m.read_text())["status"] == "completed"}

    second = subprocess.run(sweep_cmd(out), capture_output=True, text=True, timeout=540)
    assert second.returncode == 0, second.stdout + second.stderr
    grid = json.loads((out / "sweep.json").read_text())
    assert grid["algos"] == ["grpo", "dhpo-e"] and grid["seeds"] == [0, 1] and grid["steps"] == STEPS
    # The pre-registration was copied before the runs, and its digest recorded beside the grid.
    assert json.loads((out / "prereg.json").read_text()) == PREREG
    assert grid["prereg_sha256"] == hashlib.sha256((out / "prereg.json").read_bytes()).hexdigest()
    names = {"grpo-s0", "grpo-s1", "dhpo-e-s0", "dhpo-e-s1"}
    assert {p.name for p in out.iterdir() if p.is_dir() and p.name != "logs"} == names
    for name in names:
        reader = RunReader(out / name)
        assert reader.manifest.status == "completed", name
        assert reader.steps() == list(range(1, STEPS + 1)), name
    # Completed runs were skipped, not re-run; the killed run resumed from its checkpoint.
    for name, mtime in before.items():
        assert (out / name / "manifest.json").stat().st_mtime_ns == mtime, f"{name} was re-run"
    log = (out / "logs" / f"{killed}.log").read_text()
    assert "# " in log and " resume\n" in log and "resuming from" in log, log[-2000:]
    assert f"{len(before)} already complete" in second.stderr

    # The same seed gives every objective the same prompts and first rollout; another seed does not.
    def first_rollout(name):
        r = RunReader(out / name)
        sc = r.scalars().iloc[0]
        samples = r.samples(1).sort_values("response_id")
        return ([list(t) for t in samples["token_id"]], sc["reward/mean"], sc["length/mean"],
                sc["eval/heldout_reward_initial"])

    for seed in (0, 1):
        assert first_rollout(f"grpo-s{seed}") == first_rollout(f"dhpo-e-s{seed}")
    assert first_rollout("grpo-s0")[0] != first_rollout("grpo-s1")[0]

    # An objective setting given as `--hp key=value` reached every run.
    assert {RunReader(out / f"{a}-s{s}").manifest.hparams["eps_high"] for a in ("grpo", "dhpo-e") for s in (0, 1)} \
        == {0.3}

    # A different grid in the same directory is refused, naming what differs.
    other = subprocess.run([*sweep_cmd(out)[:6], "grpo", *sweep_cmd(out)[7:]], capture_output=True, text=True,
                           timeout=120)
    assert other.returncode == 2 and "algos differ" in other.stderr

    compared = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(out)], capture_output=True,
                              text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert compared.returncode == 0, compared.stderr
    assert "4 runs, 2 labels" in compared.stdout and "dhpo-e-branch" in compared.stdout
    # Checks before verdicts, on what the real trainer logged: 6 steps of 2 prompts bind no clip, so the
    # pre-registered contrast gets no verdict, and the check says why with its number.
    text = compared.stdout
    assert text.index("Manipulation checks") < text.index("Verdicts")
    assert "binding: grpo's clip removed the gradient of" in text and "(`clip/token/binding`" in text
    assert "- accuracy: this setting cannot resolve the claim: grpo's clip binds on 0.00% of tokens" in text

    # The dashboard's Sweep page opens the grid the real sweep wrote: both labels over both seeds, all completed.
    from tests.dashboard.dash_helpers import no_errors, open_page, texts

    at = open_page(monkeypatch, out, "sweep.py")
    if any(b.key == "sweep_all" for b in at.button):  # the page compares the runs picked in the sidebar: all four
        at.button(key="sweep_all").click().run()
    no_errors(at)
    summary, diffs = at.table[0].value.T, at.table[1].value.T  # shown with groups as columns
    # The runs of one objective differ only in their seed (and the seed's warm-started model): one group each.
    assert list(summary.index) == ["dhpo-e-branch", "grpo"] and [int(n) for n in summary["n"]] == [2, 2], (
        "the Sweep page split an objective's seeds into groups: a setting that differs by seed alone (such as the "
        f"manifest's per-seed warm-start model path) was taken for a setting: {list(summary.index)}")
    assert list(diffs.index) == ["dhpo-e-branch"] and diffs.loc["dhpo-e-branch", "seeds"] == "0,1"
    assert "not completed" not in texts(at)
