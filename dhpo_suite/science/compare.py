"""Across-seed statistics of a sweep: per-run outcome metrics, per-algorithm means with 95 % Student-t
intervals, paired differences against a baseline over shared seeds, and curves with bands.

Runs are read only through `dhpo_suite.runs.RunReader`; no torch (the dashboard imports this module).
Intervals are Student-t intervals over the runs (seeds) of each label (dhpo_suite.science.stats: with 3-10 seeds
a percentile bootstrap covers ~84 % instead of 95 %); below 3 seeds there is no interval, only the mean.
Pre-registered contrasts, their tests and verdicts are dhpo_suite.science.contrasts.

Per-run metrics (METRIC_DOCS holds the one-line definitions):
    final_reward   held-out reward after the last step (`eval/heldout_reward`)
    reward_auc     area under the held-out reward curve (step 0 = `eval/heldout_reward_initial`), trapezoids,
                   divided by the steps spanned: the curve's mean level, in reward units
    late_entropy   mean of `entropy/mean` over the last `late_frac` of the steps
    late_length    mean of `length/mean` over the last `late_frac` of the steps
    collapse_step  the dashboard's detector (`science.collapse.detect_collapse` on entropy and length);
                   a run that did not collapse counts as its last step (right-censored)
    residual_sd    standard deviation of the held-out reward curve around the run's own quadratic trend
                   (least squares in the step; k − 3 degrees of freedom for k points): the wobble that is not
                   learning. It replaces the sd of step-to-step changes, which at 128 held-out problems was the
                   evaluation noise alone (issue #26)
    mean_kl        mean over steps of `kl/k3` (how far each update moved the policy from its rollout)
    grad_norm_sd   sd over steps of `grad_norm` (ddof 1): the update-variance measure beside the KL
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dhpo_suite.science.collapse import detect_collapse
from dhpo_suite.science.groups import setting_text
from dhpo_suite.runs import SHARED_HPARAMS, Manifest, RunFormatError, RunReader, list_runs
from dhpo_suite.science.stats import MIN_SEEDS, t_interval

__all__ = ["METRIC_DOCS", "Interval", "curve_bands", "late_count", "load_sweep", "metrics_of", "paired_differences",
           "readable_runs", "run_label", "run_labels", "run_metrics", "stack", "summarize"]

METRIC_DOCS = {
    "final_reward": "held-out reward after the last step",
    "reward_auc": "mean level of the held-out reward curve (trapezoid area / steps)",
    "late_entropy": "mean token entropy (nats) over the last quarter of the steps",
    "late_length": "mean response length (tokens) over the last quarter of the steps",
    "collapse_step": "entropy+length collapse step (science.collapse detector; no collapse = last step)",
    "residual_sd": "sd of the held-out reward around the run's quadratic trend",
    "mean_kl": "mean over steps of the k3 KL estimate between the rollout and the updated policy",
    "grad_norm_sd": "sd over steps of the gradient norm before clipping (update variance)",
}
HELDOUT, HELDOUT_INITIAL = "eval/heldout_reward", "eval/heldout_reward_initial"
_COLUMNS = [HELDOUT, HELDOUT_INITIAL, "entropy/mean", "length/mean", "reward/mean", "kl/k3", "grad_norm"]


@dataclass(frozen=True)
class Interval:
    """A mean over runs with its 95 % t-interval (lo, hi are NaN with fewer than MIN_SEEDS runs)."""

    mean: float
    lo: float
    hi: float
    n: int


def run_label(m: Manifest) -> str:
    """A run's algorithm, plus the clip mode for DHPO objectives (e.g. "dhpo-e-unified"), from its manifest; the
    clip is the resolved one the objective recorded, so a default run and an explicit `--clip branch` run share a
    label."""
    clip = m.hparams.get("clip") if m.algorithm.startswith("dhpo") else None
    return f"{m.algorithm}-{clip}" if clip else m.algorithm


def heldout_curve(frame: pd.DataFrame) -> pd.Series:
    """Held-out reward by step, with the pre-training value at step 0 when it was recorded."""
    curve = frame.set_index("step")[HELDOUT].dropna() if HELDOUT in frame else pd.Series(dtype=float)
    if HELDOUT_INITIAL in frame and frame[HELDOUT_INITIAL].notna().any():
        curve = pd.concat([pd.Series({0: float(frame[HELDOUT_INITIAL].dropna().iloc[0])}), curve])
    return curve.sort_index().astype(float)


def late_count(n: int, late_frac: float = 0.25) -> int:
    """How many of a run's n logged steps are "late" (the last quarter by default: 8 of 30): one rule for
    late_entropy, late_length and the collapse check (dhpo_suite.science.checks)."""
    return max(1, round(late_frac * n))


def run_metrics(frame: pd.DataFrame, late_frac: float = 0.25) -> dict[str, float]:
    """The per-run metrics of the module docstring from one run's scalars frame (RunReader.scalars())."""
    curve = heldout_curve(frame)
    steps = frame["step"].to_numpy()
    late = frame[frame["step"] > steps.max() - late_count(len(steps), late_frac)] if len(steps) else frame
    span = curve.index.max() - curve.index.min() if len(curve) > 1 else 0
    by_step = frame.set_index("step")
    collapse = detect_collapse(*(by_step[c] if c in frame else pd.Series(dtype=float)
                                 for c in ("entropy/mean", "length/mean"))).step
    return {
        "final_reward": float(curve.iloc[-1]) if len(curve) else float("nan"),
        "reward_auc": float(np.trapezoid(curve.to_numpy(), curve.index.to_numpy()) / span) if span else float("nan"),
        "late_entropy": float(late["entropy/mean"].mean()) if "entropy/mean" in late else float("nan"),
        "late_length": float(late["length/mean"].mean()) if "length/mean" in late else float("nan"),
        "collapse_step": float(collapse if collapse is not None else (steps.max() if len(steps) else np.nan)),
        "collapsed": float(collapse is not None),
        "residual_sd": residual_sd(curve),
        "mean_kl": float(frame["kl/k3"].mean()) if "kl/k3" in frame else float("nan"),
        "grad_norm_sd": float(frame["grad_norm"].std(ddof=1)) if "grad_norm" in frame else float("nan"),
    }


def residual_sd(curve: pd.Series) -> float:
    """sd of `curve` around its least-squares quadratic in the step (k − 3 dof); NaN below 4 points."""
    if len(curve) < 4:
        return float("nan")
    x, y = curve.index.to_numpy(dtype=float), curve.to_numpy()
    fit = np.polyval(np.polyfit(x, y, 2), x)
    return float(np.sqrt(np.sum((y - fit) ** 2) / (len(y) - 3)))


def readable_runs(root: Path, problems: list[str], columns: list[str] | None = None):
    """(summary, reader, scalars frame) of every readable run under `root`; each unreadable one is a line
    appended to `problems` (the kept-data export reads runs the same way)."""
    for summary in list_runs(root):
        if summary.manifest is None:
            problems.append(f"{summary.path}: {summary.problem}")
            continue
        try:
            reader = RunReader(summary.path)
            frame = reader.scalars(columns=columns)
        except RunFormatError as e:
            problems.append(str(e))
            continue
        yield summary, reader, frame


def load_sweep(root: Path | str, late_frac: float = 0.25, all_columns: bool = False
               ) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """Every run under `root`: (metrics: one row per run with label, seed, run (its path under root), status,
    steps and the per-run metrics; scalars: the runs' scalar frames stacked with label, seed and run columns;
    problems). `all_columns`: every scalar the runs logged (compare's manipulation checks), else those the
    metrics need (the dashboard)."""
    root = Path(root)
    loaded: list = []
    problems: list[str] = []
    for summary, reader, frame in readable_runs(root, problems, None if all_columns else _COLUMNS):
        problems += [str(p) for p in reader.problems]
        if frame.empty:
            problems.append(f"{summary.path}: no committed steps yet")
            continue
        loaded.append((summary.path.relative_to(root).as_posix(), reader.manifest, frame))
    labels = run_labels([m for _, m, _ in loaded])
    runs = [(run, label, m.seed, m.status, frame) for (run, m, frame), label in zip(loaded, labels)]
    return metrics_of(runs, late_frac), stack(runs), problems


def metrics_of(runs: list[tuple], late_frac: float = 0.25) -> pd.DataFrame:
    """The per-run metrics table from (run, label, seed, status, scalars frame) tuples (also the kept-data path,
    dhpo_suite.science.kept, which has frames but no run directories)."""
    rows = [{"label": label, "seed": seed, "run": run, "status": status, "steps": int(frame["step"].max()),
             **run_metrics(frame, late_frac)} for run, label, seed, status, frame in runs]
    metrics = pd.DataFrame(rows, columns=["label", "seed", "run", "status", "steps", *METRIC_DOCS, "collapsed"])
    return metrics.sort_values(["label", "seed", "run"], ignore_index=True)


def stack(runs: list[tuple]) -> pd.DataFrame:
    """The scalar frames of (run, label, seed, status, frame) tuples stacked, with label, seed and run columns."""
    frames = [frame.assign(label=label, seed=seed, run=run) for run, label, seed, _, frame in runs]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["step", "label", "seed", "run"])


def run_labels(manifests: list) -> list[str]:
    """run_label of each run, plus every setting that differs between runs of the same label: `-key=value` for
    an objective setting the run gave explicitly (`--hp`; a GRPO 0.2/0.28 control beside plain GRPO is
    `grpo-eps_high=0.28`), ` · key=value` for an optimisation setting (runs.SHARED_HPARAMS, as the dashboard's
    groups name them: DHPO-E runs at two lrs are `dhpo-e-branch · lr=0.0001` and `dhpo-e-branch · lr=4e-05`,
    never averaged together). A setting every run shares names no one, nor one that not every run recorded."""
    base = [run_label(m) for m in manifests]
    varying: dict[str, set[str]] = {}
    for label, m in zip(base, manifests):
        for other_label, other in zip(base, manifests):
            if other_label == label:
                varying.setdefault(label, set()).update(
                    k for k in set(m.hparams) & set(other.hparams) if m.hparams[k] != other.hparams[k])
    out = []
    for label, m in zip(base, manifests):
        given = (m.config or {}).get("hparams") or {}
        keys = sorted(varying.get(label, ()))
        hp = [f"{k}={m.hparams[k]}" for k in keys if k in given]
        shared = [f"{k}={setting_text(m.hparams[k])}" for k in keys if k in SHARED_HPARAMS and k not in given]
        out.append(" · ".join(["-".join([label, *hp]), *shared]))
    return out


def interval(values) -> Interval:
    """Mean of `values` (NaNs dropped) and its 95 % Student-t interval; the mean alone below MIN_SEEDS."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return Interval(float("nan"), float("nan"), float("nan"), 0)
    if len(x) < MIN_SEEDS:
        return Interval(float(x.mean()), float("nan"), float("nan"), len(x))
    lo, hi = t_interval(x)
    return Interval(float(x.mean()), lo, hi, len(x))


def summarize(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per label, per metric an Interval (columns: label, n, <metric> ..., collapsed = k/n)."""
    return pd.DataFrame([{"label": label, "n": len(g), "collapsed": f"{int(g['collapsed'].sum())}/{len(g)}",
                          **{m: interval(g[m]) for m in METRIC_DOCS}}
                         for label, g in metrics.groupby("label", sort=True)])


def paired_differences(metrics: pd.DataFrame, baseline: str = "grpo") -> pd.DataFrame:
    """Per label other than `baseline`, per metric: mean over shared seeds of (label − baseline) with its
    95 % t-interval. Empty when the baseline has no runs. Column `seeds`: the shared seeds used.
    Several runs of one label and seed (outside a sweep) are averaged first."""
    per_seed = metrics.groupby(["label", "seed"], as_index=False)[list(METRIC_DOCS)].mean()  # repeats averaged
    base = per_seed[per_seed["label"] == baseline].set_index("seed")
    if base.empty:
        return pd.DataFrame([])
    rows = []
    for label, g in per_seed[per_seed["label"] != baseline].groupby("label", sort=True):
        g = g.set_index("seed")
        shared = sorted(set(g.index) & set(base.index))
        diff = {m: interval(g.loc[shared, m].to_numpy() - base.loc[shared, m].to_numpy()) for m in METRIC_DOCS}
        rows.append({"label": label, "seeds": shared, **diff})
    return pd.DataFrame(rows)


def curve_bands(scalars: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Mean of `metric` across the seeds of each label at each step, with a 95 % t band
    (columns label, step, mean, lo, hi, n). Steps where only some seeds have a value use those seeds."""
    out = []
    for label, g in scalars.groupby("label", sort=True):
        if metric not in g:
            continue
        wide = g.pivot_table(index="step", columns="seed", values=metric, aggfunc="last")
        if metric == HELDOUT and HELDOUT_INITIAL in g:
            first = g.groupby("seed")[HELDOUT_INITIAL].first()
            wide.loc[0] = first
            wide = wide.sort_index()
        wide = wide.dropna(how="all")
        for step, row in wide.iterrows():
            iv = interval(row.to_numpy())
            out.append({"label": label, "step": int(step), "mean": iv.mean, "lo": iv.lo, "hi": iv.hi, "n": iv.n})
    return pd.DataFrame(out, columns=["label", "step", "mean", "lo", "hi", "n"])
