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
from dhpo_suite.science.tables import fmt_interval
from tests.dashboard.fixture_runs import write_lr_sweep

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
                s = {"entropy/mean": (1.0 + 0.1 * rng.standard_normal()
                                      + (3.0 if algo == "grpo" and step == SPIKE else 0)),
                     "length/mean": 50.0 + rng.standard_normal(), "reward/mean": 0.5}
                if step == 1:
                    s["eval/heldout_reward_initial"] = 0.1 * seed
                if step % 10 == 0:
                    s["eval/heldout_reward"] = 0.2 + 0.1 * seed + step / 1000
                w.write_step(StepRecord(step, s))
            w.close()
    return root


def version(root) -> tuple:
    """Every run of `root` picked (the version key of the Sweep page's statistics)."""
    table = data.runs_table(str(root))
    return sweep_stats.selection_version(table, list(table.index))


def test_thinned_bands_are_compares_at_the_steps_drawn_and_keep_the_spike(sweep_root):
    root, v = str(sweep_root), version(sweep_root)
    metrics, scalars, problems = cmp.load_sweep(root)
    assert problems == [] and len(metrics) == 6
    full = cmp.curve_bands(scalars[scalars["label"] == "grpo"], "entropy/mean").set_index("step")
    thinned = sweep_stats.bands(v, "entropy/mean", "grpo", n=10).set_index("step")
    assert len(thinned) <= 10 and {1, SPIKE, STEPS} <= set(thinned.index)
    assert thinned["mean"].max() == full["mean"].max()  # the spike, at its step
    cols = ["mean", "lo", "hi", "n"]
    pd.testing.assert_frame_equal(thinned[cols], full.loc[thinned.index, cols], check_dtype=False)
    assert len(sweep_stats.bands(v, "entropy/mean", "grpo")) == STEPS  # short curves: every step
    heldout = sweep_stats.bands(v, cmp.HELDOUT, "grpo", n=4)
    assert heldout["step"].tolist()[0] == 0 and heldout["mean"].iloc[0] == pytest.approx(0.1)  # before training


def test_statistics_are_compares_and_computed_once_per_version(sweep_root, monkeypatch):
    root, v = str(sweep_root), version(sweep_root)
    metrics = cmp.load_sweep(root)[0]
    expected = cmp.summarize(metrics).set_index("label")
    got = sweep_stats.summary(v).set_index("label")
    assert got.loc["grpo", "late_entropy"] == expected.loc["grpo", "late_entropy"]
    diffs = sweep_stats.differences(v, "grpo").set_index("label")
    assert diffs.loc["dhpo-e", "final_reward"] == cmp.paired_differences(metrics, "grpo").set_index("label").loc[
        "dhpo-e", "final_reward"]
    sweep_stats.bands(v, "length/mean", "dhpo-e")

    def no_bootstrap(*args, **kwargs):
        raise AssertionError("bootstrapped again for an unchanged sweep")

    for name in ("interval", "summarize", "paired_differences", "curve_bands", "load_sweep", "metrics_of",
                 "run_metrics"):
        monkeypatch.setattr(cmp, name, no_bootstrap)
    sweep_stats.summary(v)  # a rerun of the page: every statistic from the cache
    sweep_stats.differences(v, "grpo")
    sweep_stats.bands(v, "length/mean", "dhpo-e")


@pytest.fixture(scope="module")
def lr_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("lr-sweep")
    write_lr_sweep(root)
    return root


def picked(root, prefix: str = "") -> tuple:
    table = data.runs_table(str(root))
    return sweep_stats.selection_version(table, [r for r in table.index if r.startswith(prefix)])


def texts_of(frame: pd.DataFrame) -> pd.DataFrame:
    """Intervals as compare prints them (to 6 digits): Interval holds NaNs, which never compare equal."""
    return frame.set_index("label")[list(cmp.METRIC_DOCS)].map(lambda iv: fmt_interval(iv, 6))


def test_two_lr_groups_per_algorithm_each_with_the_numbers_compare_gives_on_its_own_sweep(lr_root):
    v = picked(lr_root)
    got = sweep_stats.summary(v)
    assert got["label"].tolist() == ["dhpo-e · lr=0.0001", "dhpo-e · lr=0.002", "grpo · lr=0.0001", "grpo · lr=0.002"]
    assert got["n"].tolist() == [3, 3, 3, 3]
    for folder, lr in (("lr-small", "0.0001"), ("lr-large", "0.002")):
        alone = cmp.load_sweep(lr_root / folder)[0]  # `dhpo-suite compare lr_root/<folder>`
        mine = texts_of(got).loc[[f"dhpo-e · lr={lr}", f"grpo · lr={lr}"]]
        pd.testing.assert_frame_equal(mine.set_axis(["dhpo-e", "grpo"]), texts_of(cmp.summarize(alone)),
                                      check_names=False)
        diff = texts_of(sweep_stats.differences(v, f"grpo · lr={lr}")).loc[[f"dhpo-e · lr={lr}"]]
        expected = texts_of(cmp.paired_differences(alone, "grpo"))
        pd.testing.assert_frame_equal(diff.set_axis(["dhpo-e"]), expected, check_names=False)
        assert "nan" not in expected.loc["dhpo-e", "final_reward"]


def test_only_the_picked_runs_are_compared(lr_root):
    got = sweep_stats.summary(picked(lr_root, "lr-small/"))
    assert got["label"].tolist() == ["dhpo-e", "grpo"]  # lr no longer differs: compare's own labels
    pd.testing.assert_frame_equal(texts_of(got), texts_of(cmp.summarize(cmp.load_sweep(lr_root / "lr-small")[0])))


def test_curves_are_averaged_on_the_steps_every_run_of_the_group_logged(lr_root):
    v = picked(lr_root)
    small = sweep_stats.bands(v, cmp.HELDOUT, "grpo · lr=0.0001")
    large = sweep_stats.bands(v, cmp.HELDOUT, "grpo · lr=0.002")
    assert small["step"].tolist() == [0, 10, 20, 30, 40] and large["step"].tolist() == [0, 5, 15, 25, 35]
    assert small["n"].tolist() == [3] * 5 and large["n"].tolist() == [3] * 5
    # seeds 0, 1, 2 add 0.05·seed: the mean is 0.25 + step/400 at every grid step, no zigzag
    assert small["mean"].tolist()[1:] == pytest.approx([0.25 + s / 400 for s in (10, 20, 30, 40)])


def test_a_step_not_logged_by_every_run_of_a_group_is_off_its_grid():
    frame = pd.DataFrame({"run": ["a"] * 4 + ["b"] * 3, "step": [1, 2, 3, 4, 1, 2, 3],
                          "m": [1.0, 2.0, 3.0, 4.0, 1.0, np.nan, 3.0]})
    assert sweep_stats.common_grid(frame, "m").tolist() == [1, 3]


def test_intervals_keep_significant_digits_and_runs_keep_their_colour_when_one_is_added():
    from dhpo_suite.dashboard.figures.curves import run_colors
    from dhpo_suite.dashboard.sweep_stats import fmt_sig
    from dhpo_suite.science.compare import Interval

    # a KL of order 1e-4 read "0.000 [-0.000, 0.000]" with 3 fixed decimals (issue 43)
    assert fmt_sig(Interval(1.2e-4, -3e-5, 2.7e-4, 3)) == "0.000120 [-0.000030, 0.000270]"
    assert fmt_sig(Interval(182.4, 171.2, 193.0, 3)) == "182 [171, 193]"
    assert fmt_sig(Interval(float("nan"), float("nan"), float("nan"), 0)) == "—"
    runs = [f"sweep/grpo-s{s}" for s in range(12)]
    before = run_colors(runs)
    after = run_colors([*runs, "sweep/a-new-s0"])  # claims last: started last
    assert {r: after[r] for r in runs} == before and len(set(before.values())) == len(runs)
