"""The Sweep page's cached statistics (dashboard/sweep_stats.py) are those of dhpo_suite.science.compare, the
numbers of `dhpo-suite compare`: bands thinned for drawing keep compare's values at every step drawn, and the
spikes of the mean; nothing is bootstrapped again while the sweep is unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dhpo_suite.dashboard import data, sweep_stats
from dhpo_suite.runs import Manifest, RunWriter, StepRecord
from dhpo_suite.science import compare as cmp

STEPS = 40
SPIKE = 23
"""The step at which every seed of grpo logs an entropy spike (its across-seed mean spikes there)."""


@pytest.fixture(scope="module")
def sweep_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep-stats")
    for algo in ("grpo", "dhpo-e"):
        for seed in range(3):
            rng = np.random.default_rng(100 * seed + len(algo))
            w = RunWriter(root / f"{algo}-s{seed}", Manifest(algorithm=algo, seed=seed, backend="embedded"),
                          fsync=False)
            for step in range(1, STEPS + 1):
                s = {"entropy/mean": 1.0 + 0.1 * rng.standard_normal() + (3.0 if algo == "grpo" and step == SPIKE else 0),
                     "length/mean": 50.0 + rng.standard_normal(), "reward/mean": 0.5}
                if step == 1:
                    s["eval/heldout_reward_initial"] = 0.1 * seed
                if step % 10 == 0:
                    s["eval/heldout_reward"] = 0.2 + 0.1 * seed + step / 1000
                w.write_step(StepRecord(step, s))
            w.close()
    return root


def version(root) -> tuple:
    return sweep_stats.sweep_version(data.runs_table(str(root)))


def test_thinned_bands_are_compares_at_the_steps_drawn_and_keep_the_spike(sweep_root):
    root, v = str(sweep_root), version(sweep_root)
    metrics, scalars, problems = cmp.load_sweep(root)
    assert problems == [] and len(metrics) == 6
    full = cmp.curve_bands(scalars[scalars["label"] == "grpo"], "entropy/mean").set_index("step")
    thinned = sweep_stats.bands(root, v, "entropy/mean", "grpo", n=10).set_index("step")
    assert len(thinned) <= 10 and {1, SPIKE, STEPS} <= set(thinned.index)
    assert thinned["mean"].max() == full["mean"].max()  # the spike, at its step
    cols = ["mean", "lo", "hi", "n"]
    pd.testing.assert_frame_equal(thinned[cols], full.loc[thinned.index, cols], check_dtype=False)
    assert len(sweep_stats.bands(root, v, "entropy/mean", "grpo")) == STEPS  # short curves: every step
    heldout = sweep_stats.bands(root, v, cmp.HELDOUT, "grpo", n=4)
    assert heldout["step"].tolist()[0] == 0 and heldout["mean"].iloc[0] == pytest.approx(0.1)  # before training


def test_statistics_are_compares_and_computed_once_per_version(sweep_root, monkeypatch):
    root, v = str(sweep_root), version(sweep_root)
    metrics = cmp.load_sweep(root)[0]
    expected = cmp.summarize(metrics).set_index("label")
    got = sweep_stats.summary(root, v).set_index("label")
    assert got.loc["grpo", "late_entropy"] == expected.loc["grpo", "late_entropy"]
    diffs = sweep_stats.differences(root, v, "grpo").set_index("label")
    assert diffs.loc["dhpo-e", "final_reward"] == cmp.paired_differences(metrics, "grpo").set_index("label").loc[
        "dhpo-e", "final_reward"]
    sweep_stats.bands(root, v, "length/mean", "dhpo-e")

    def no_bootstrap(*args, **kwargs):
        raise AssertionError("bootstrapped again for an unchanged sweep")

    for name in ("interval", "summarize", "paired_differences", "curve_bands", "load_sweep"):
        monkeypatch.setattr(cmp, name, no_bootstrap)
    sweep_stats.summary(root, v)  # a rerun of the page: every statistic from the cache
    sweep_stats.differences(root, v, "grpo")
    sweep_stats.bands(root, v, "length/mean", "dhpo-e")
