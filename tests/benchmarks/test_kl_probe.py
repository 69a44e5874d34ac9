"""benchmarks/kl_probe.py, the path a user runs, on the committed KL probe of issue 46 (docs/reproduction/data/
probe46): the ratios the sweep script's gate printed when it ran (0.735 at lr 5e-5, 1.158 at 6e-5, from its own
pandas one-liner over the same metrics.csv) and a power law checked on numbers made by hand."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.kl_probe import power_law_lr

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_probe_reads_as_the_gate_read_it():
    out = subprocess.run([sys.executable, "benchmarks/kl_probe.py", "docs/reproduction/data/probe46", "--arm",
                          "dhpo-e-branch", "--baseline", "grpo", "--fit", "5e-5,1e-4"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    assert "lr=5e-05: KL per step 0.735× grpo's (outside [0.8, 1.25])" in out
    assert "lr=6e-05: KL per step 1.158× grpo's (in [0.8, 1.25])" in out
    assert "KL ∝ lr^1.74; ratio 1 at lr 5.97e-05" in out  # whence the superseding registration's 6e-5


def test_power_law_through_two_points():
    # ratio = (lr / 1e-4)^2 · 4: ratio 1 at lr 5e-5, p 2; a third point far from 1 is not used
    points = {lr: 4 * (lr / 1e-4) ** 2 for lr in (4e-5, 6e-5, 1e-3)}
    p, lr = power_law_lr(points)
    assert p == pytest.approx(2) and lr == pytest.approx(5e-5)
    assert math.isclose(power_law_lr({1e-4: 2.0, 2e-4: 4.0})[1], 5e-5)  # linear: half the lr, half the ratio
