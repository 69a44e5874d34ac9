"""The trust-region leak (dhpo_suite.science.leak): on telemetry the real accumulator builds from hand-worked
tokens, written as runs and read back as compare reads them; on the committed chain data (GRPO 0, DHPO-E branch
above 0); and in `dhpo-suite compare`'s manipulation checks."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from dhpo_suite.runs import Manifest, RunWriter, TelemetrySpec
from dhpo_suite.science import compare as cmp
from dhpo_suite.science import kept
from dhpo_suite.science.leak import label_leaks, run_leak
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import TelemetryAccumulator

ROOT = Path(__file__).parents[2]
CHAIN = ROOT / "docs" / "reproduction" / "data" / "chain"
STEPS = [  # one response per step, A = +1; each step's log-ratios multiply to 1, so s = 1 (inside its region)
    [math.log(1.5), -math.log(1.5)],
    [math.log(2.0), math.log(2.0), -math.log(4.0)],
]


def write_hand_run(path: Path, algo: str, **hp) -> Path:
    resolved = {"clip": hp.get("clip", "branch")} if algo.startswith("dhpo") else {}  # as the trainer records it
    w = RunWriter(path, Manifest(algorithm=algo, hparams=resolved, seed=0, backend="embedded"), fsync=False)
    for step, log_r in enumerate(STEPS, start=1):
        old = torch.full((1, len(log_r)), -1.0, dtype=torch.float64)
        lp = old + torch.tensor([log_r], dtype=torch.float64)
        adv, mask = torch.ones_like(old), torch.ones_like(old, dtype=torch.bool)
        acc = TelemetryAccumulator(TelemetrySpec(max_response_length=len(log_r)))
        acc.add_update(get_objective(algo, **hp)(lp, old, adv, mask), response_ids=[0])
        w.write_step(acc.to_record(step))
    w.close()
    return path


def test_leak_of_hand_worked_telemetry(tmp_path):
    """DHPO-A (w = 0.5), token ε 0.2/0.28, A = +1, s = 1 at both steps.

    Step 1 (2 tokens): r = 1.5 binds: m = 0.5·1.5 + 0.5·1 = 1.25, m̃ = 0.5·1.28 + 0.5 = 1.14, so only the sequence
    half keeps its gradient, κ = 0.5·1/1.25 = 0.4; r = 2/3 lies below 0.8 with A > 0: the min takes m, no clip.
    Step 2 (3 tokens): r = 2 binds twice, κ = 0.5/(0.5·2 + 0.5) = 1/3 each; r = 1/4: no clip, as above.
    Leak over the run's 3 binding tokens: (0.4 + 2/3) / 3 = 0.35556 (not the mean of the steps' 0.4 and 1/3).
    GRPO on the same tokens removes every binding token's gradient: leak 0."""
    write_hand_run(tmp_path / "dhpo-a-s0", "dhpo-a")
    write_hand_run(tmp_path / "grpo-s0", "grpo")
    _, scalars, problems = cmp.load_sweep(tmp_path, all_columns=True)
    assert problems == []
    leaks = {x.label: x for x in label_leaks(scalars)}
    assert leaks["dhpo-a-branch"].leak.mean == pytest.approx((0.4 + 2 / 3) / 3, abs=1e-12)
    assert leaks["dhpo-a-branch"].branch == "token"
    assert leaks["dhpo-a-branch"].binding == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert leaks["dhpo-a-branch"].sequence_above == 0.0
    assert leaks["grpo"].leak.mean == 0.0 and leaks["grpo"].branch == "token"


def test_a_run_where_no_clip_bound_has_no_leak(tmp_path):
    frame = cmp.load_sweep(write_hand_run(tmp_path / "r", "dhpo-a", clip="unified").parent, all_columns=True)[1]
    # unified clips m = 0.5·r + 0.5: 1.25, 0.83 (step 1) and 1.5, 1.5, 0.625 (step 2) against [0.8, 1.28] with
    # A > 0: the two m = 1.5 bind, and a unified clip keeps nothing of them
    assert run_leak(frame).value == 0.0 and run_leak(frame).branch == "mixed"
    assert math.isnan(run_leak(frame.drop(columns=[c for c in frame if "binding" in c])).value)


def test_committed_chain_data_grpo_leaks_nothing_dhpo_e_branch_does():
    _, scalars, _ = kept.load(CHAIN)
    leaks = {x.label: x.leak for x in label_leaks(scalars)}
    assert leaks["grpo"].mean == 0.0 and leaks["grpo"].n == 8
    assert leaks["dhpo-e-unified"].mean == 0.0
    assert leaks["dhpo-e-branch"].lo > 0.3 and leaks["dhpo-e-branch"].n == 8
    assert leaks["dhpo-a-branch"].lo > leaks["dhpo-e-branch"].hi  # w = 0.5 leaks more than DHPO-E's mostly-small w


def test_compare_prints_the_leak_among_the_manipulation_checks():
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(CHAIN)], capture_output=True,
                         text=True, timeout=300, env={**os.environ, "COLUMNS": "250"}, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    checks, verdicts = text.index("Manipulation checks"), text.index("Verdicts")
    leak = text.index("trust-region leak: dhpo-e-branch kept 39.1% [37.7%, 40.4%] (n=8)")
    assert checks < leak < verdicts
    assert "trust-region leak: grpo kept 0.0% [0.0%, 0.0%] (n=8)" in text
