"""dhpo_suite.science.compare on run directories whose curves are chosen here, so every expected value is
worked out by hand from the metric definitions (docstring of compare.py) and the collapse rule
(docs/dashboard.md); the bootstrap interval is checked against the exact bootstrap distribution, enumerated."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps

from dhpo_suite.runs import Manifest, RunWriter, StepRecord
from dhpo_suite.science import compare as cmp

STEPS = 40


def write_run(path, algo, seed, heldout: dict[int, float], entropy, length, clip=None, status="completed",
              extra=None, hparams=None, given=None):
    """A run directory with the given held-out curve ({step: value}, step 0 = before training) and
    per-step entropy and length (callables of the step); `extra(step)`: more scalars; `hparams`: resolved
    objective settings; `given`: those set explicitly (`--hp`, the manifest's config)."""
    hparams = {**({"clip": clip} if clip else {}), **(hparams or {})}
    w = RunWriter(path, Manifest(algorithm=algo, hparams=hparams, seed=seed, backend="embedded",
                                 config={"hparams": given or {}}), fsync=False)
    for step in range(1, STEPS + 1):
        s = {"entropy/mean": entropy(step), "length/mean": length(step), "reward/mean": 0.5, **(extra(step) if extra
                                                                                              else {})}
        if step == 1 and 0 in heldout:
            s["eval/heldout_reward_initial"] = heldout[0]
        if step in heldout:
            s["eval/heldout_reward"] = heldout[step]
        w.write_step(StepRecord(step, s))
    if status == "completed":
        w.close()
    return path


def flat(v):
    return lambda step: v


def test_run_metrics_match_hand_computation(tmp_path):
    # Held-out curve 0.0 (step 0), 0.5 (20), 0.3 (30), 0.6 (40).
    # AUC: trapezoids 20*0.25 + 10*0.4 + 10*0.45 = 13.5 over 40 steps = 0.3375.
    # Residual sd around the quadratic trend: with 4 points the residual is the projection of y on the one direction
    # orthogonal to 1, x, x^2, the divided-difference weights w_i = 1 / prod_{j != i} (x_i - x_j) = -1/24000,
    # 1/4000, -1/3000, 1/8000; w.y = 0.0001, w.w = 1.909722e-7; |r|^2 = (w.y)^2 / w.w = 0.0523636 over 1 dof.
    # Entropy 1.0 up to step 10, then 0.2; length 20 then 10: with a 4-point plateau (10 % of 40), the
    # 5-point centred median first falls to 0.2 (<= 0.5 * 1.0) at step 11 and to 10 (<= 0.7 * 20) at step 11.
    # Late quarter = steps 31..40: entropy 0.2, length 10.
    # KL 0.001 * step: mean over steps 1..40 = 0.0205. Grad norm 1 on odd steps, 3 on even: sd (ddof 1) of 20
    # ones and 20 threes = sqrt(40 / 39).
    write_run(tmp_path / "r", "grpo", 0, {0: 0.0, 20: 0.5, 30: 0.3, 40: 0.6},
              lambda s: 1.0 if s <= 10 else 0.2, lambda s: 20.0 if s <= 10 else 10.0,
              extra=lambda s: {"kl/k3": 0.001 * s, "grad_norm": 1.0 if s % 2 else 3.0})
    metrics, scalars, problems = cmp.load_sweep(tmp_path)
    assert problems == []
    row = metrics.iloc[0]
    assert row["label"] == "grpo" and row["seed"] == 0 and row["steps"] == STEPS
    assert row["final_reward"] == pytest.approx(0.6)
    assert row["reward_auc"] == pytest.approx(0.3375)
    assert row["residual_sd"] == pytest.approx(0.0523636 ** 0.5, rel=1e-5)
    assert row["mean_kl"] == pytest.approx(0.0205) and row["grad_norm_sd"] == pytest.approx((40 / 39) ** 0.5)
    assert row["late_entropy"] == pytest.approx(0.2)
    assert row["late_length"] == pytest.approx(10.0)
    assert row["collapse_step"] == 11 and row["collapsed"] == 1


def test_no_collapse_is_censored_at_the_last_step(tmp_path):
    write_run(tmp_path / "r", "grpo", 0, {0: 0.1, 40: 0.2}, flat(1.0), flat(20.0))
    row = cmp.load_sweep(tmp_path)[0].iloc[0]
    assert row["collapse_step"] == STEPS and row["collapsed"] == 0
    assert np.isnan(row["residual_sd"])  # two points: no trend to measure around


def t_ci(x):
    """scipy's one-sample t-test confidence interval of the mean of x (the reference for compare's intervals)."""
    ci = sps.ttest_1samp(x, 0.0).confidence_interval(0.95)
    return ci.low, ci.high


def test_interval_is_the_student_t_interval_and_absent_below_three_runs():
    x = [0.2, 0.4, 0.9, 0.5]
    iv = cmp.interval(x)
    lo, hi = t_ci(x)
    assert iv.mean == pytest.approx(0.5) and iv.n == 4
    assert iv.lo == pytest.approx(lo, rel=1e-10) and iv.hi == pytest.approx(hi, rel=1e-10)
    for few in ([0.3], [0.0, 0.0]):  # issue 26: `0.000 [0.000, 0.000]` from 2 seeds
        assert cmp.interval(few).n == len(few) and np.isnan(cmp.interval(few).lo)
    same = cmp.interval([0.3, 0.3, 0.3])
    assert (same.lo, same.hi) == (pytest.approx(0.3), pytest.approx(0.3))


def test_summary_and_paired_differences_over_shared_seeds(tmp_path):
    finals = {"grpo": [0.2, 0.4, 0.6], "dhpo-e": [0.3, 0.6, 0.6, 0.9]}
    for algo, values in finals.items():
        for seed, v in enumerate(values):
            clip = "branch" if algo.startswith("dhpo") else None
            write_run(tmp_path / f"{algo}-s{seed}", algo, seed, {0: 0.0, 40: v}, flat(1.0), flat(20.0), clip=clip)
    write_run(tmp_path / "dhpo-e-unified-s0", "dhpo-e", 0, {0: 0.0, 40: 0.1}, flat(1.0), flat(20.0),
              clip="unified", status="running")
    metrics, scalars, problems = cmp.load_sweep(tmp_path)
    summary = cmp.summarize(metrics).set_index("label")
    assert list(summary.index) == ["dhpo-e-branch", "dhpo-e-unified", "grpo"]
    assert summary.loc["grpo", "final_reward"].mean == pytest.approx(0.4)
    assert summary.loc["dhpo-e-branch", "n"] == 4
    assert summary.loc["dhpo-e-branch", "final_reward"].mean == pytest.approx(0.6)
    # Paired over seeds 0-2 only: differences 0.1, 0.2, 0.0 -> mean 0.1; scipy's t-interval.
    diffs = cmp.paired_differences(metrics, "grpo").set_index("label")
    d = diffs.loc["dhpo-e-branch"]
    assert d["seeds"] == [0, 1, 2]
    assert d["final_reward"].mean == pytest.approx(0.1)
    lo, hi = t_ci([0.1, 0.2, 0.0])
    assert d["final_reward"].lo == pytest.approx(lo, rel=1e-9) and d["final_reward"].hi == pytest.approx(hi, rel=1e-9)
    assert diffs.loc["dhpo-e-unified", "seeds"] == [0]
    # Curves: the held-out band at step 40 spans the grpo seeds' mean 0.4; step 0 is the initial value.
    bands = cmp.curve_bands(scalars, cmp.HELDOUT)
    g = bands[bands["label"] == "grpo"].set_index("step")
    assert list(g.index) == [0, 40] and g.loc[40, "mean"] == pytest.approx(0.4) and g.loc[40, "n"] == 3
    assert g.loc[40, "lo"] <= 0.4 <= g.loc[40, "hi"]


def test_compare_cli_prints_tables_and_names_unfinished_runs(tmp_path):
    for seed, v in enumerate([0.2, 0.4]):
        write_run(tmp_path / f"grpo-s{seed}", "grpo", seed, {0: 0.0, 40: v}, flat(1.0), flat(20.0))
        write_run(tmp_path / f"dhpo-a-s{seed}", "dhpo-a", seed, {0: 0.0, 40: v + 0.1}, flat(1.0), flat(20.0),
                  clip="branch", status="completed" if seed else "running")
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(tmp_path), "--csv",
                          str(tmp_path / "m.csv")], capture_output=True, text=True, timeout=120,
                         env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert "dhpo-a-branch" in out.stdout and "Paired difference vs grpo" in out.stdout
    assert "dhpo-a-s0 (running, step 40)" in out.stdout
    assert "0.100" in out.stdout and "[0.100, 0.100]" not in out.stdout  # 2 seeds: a mean, no interval
    assert "no pre-registration" in out.stdout and "no verdicts" in out.stdout
    assert (tmp_path / "m.csv").read_text().count("\n") == 5
    empty = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(tmp_path / "m.csv")],
                           capture_output=True, text=True, timeout=120)
    assert empty.returncode == 2 and "not a directory" in empty.stderr


def test_runs_at_another_lr_are_their_own_label_never_averaged(tmp_path):
    """An optimisation setting (runs.SHARED_HPARAMS) that differs between runs of one objective names their
    labels as the dashboard's groups do, given explicitly or not (no run is the reference: the lr 1e-4 runs are
    named too, so a contrast written for plain `dhpo-e-branch` finds no arm rather than a mix); a key only some
    runs recorded (older runs lack weight_decay) names no one."""
    from dhpo_suite.science.compare import run_labels

    def manifest(algo, **hp):
        return Manifest(algorithm=algo, hparams={"clip": "branch", **hp}, config={"hparams": {}})

    runs = [manifest("dhpo-e", lr=1e-4), manifest("dhpo-e", lr=4e-5, weight_decay=0.1),
            manifest("dhpo-e", lr=1e-4, weight_decay=0.1), manifest("grpo", lr=1e-4)]
    assert run_labels(runs) == ["dhpo-e-branch · lr=0.0001", "dhpo-e-branch · lr=4e-05", "dhpo-e-branch · lr=0.0001",
                                "grpo"]
