"""Page-level frames: the cached per-run loaders of data.py combined across the selected runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dhpo_suite.dashboard import data
from dhpo_suite.dashboard.controls import Context
from dhpo_suite.dashboard.figures.evaluation import summary_rows
from dhpo_suite.runs import eval_results as er

__all__ = ["scalars_frame", "evals_frame", "sample_steps", "log_ratio_names"]

HEATMAP_STEPS = 120
"""Most steps a heatmap reads (evenly spaced over the range): bounds the files read per view."""
SUMMARY_STEPS = 40
"""Most steps the run-level binding-token summary reads (one outliers file each)."""


def scalars_frame(ctx: Context, runs: list[str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Scalars of the runs (default: the selection), stacked with a `run` column."""
    parts, problems = [], []
    for run in ctx.selected if runs is None else runs:
        path = ctx.path(run)
        frame, probs = data.scalars(path, data.run_version(path))
        problems += probs
        parts.append(frame.assign(run=run))
    if not parts:
        return pd.DataFrame(columns=["run", "step"]), problems
    return pd.concat(parts, ignore_index=True), problems


def evals_frame(ctx: Context) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """One row per (evaluation, benchmark): checkpoints of the selected runs, then evaluations outside any run
    found under the runs directory (step NaN); {label: eval dir}; problems."""
    rows, dirs, problems = [], {}, []
    for run in ctx.selected:
        summaries, probs = data.eval_summaries(ctx.path(run))
        problems += probs
        algorithm = str(ctx.table.at[run, "algorithm"])
        for step, (folder, summary) in summaries.items():
            label = f"{run} · step {step}"
            dirs[label] = folder
            rows += summary_rows(summary, label=label, run=run, algorithm=algorithm, step=step)
    for label, folder in data.standalone_evals(ctx.root).items():
        path = Path(folder) / er.SUMMARY
        summary = data.summary(str(path), data.mtime(path))
        if isinstance(summary, str):
            problems.append(summary)
            continue
        dirs[label] = folder
        rows += summary_rows(summary, label=label, run=label, algorithm=str(summary.get("model") or "—"))
    cols = ["label", "run", "algorithm", "step", "bench", "metric", "value", "avg"]
    return pd.DataFrame(rows, columns=cols), dirs, problems


def sample_steps(steps: list[int], lo: int, hi: int, n: int = HEATMAP_STEPS) -> list[int]:
    """At most n committed steps in [lo, hi], evenly spaced, always including the first and the last."""
    inside = [s for s in steps if lo <= s <= hi]
    if len(inside) <= n:
        return inside
    idx = np.unique(np.linspace(0, len(inside) - 1, n).round().astype(int))
    return [inside[i] for i in idx]


def log_ratio_names(branch: str, sign: str) -> list[str]:
    """Histogram names of a branch's log-ratio for an advantage sign ("all", "A>0", "A<0", "A=0")."""
    parts = {"all": ("pos", "neg", "zero"), "A>0": ("pos",), "A<0": ("neg",), "A=0": ("zero",)}[sign]
    return [f"log_ratio/{branch}/{p}" for p in parts]
