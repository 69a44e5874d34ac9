"""The Sweep page's numbers: the selected runs grouped by every setting that differs (science.group_labels), the
statistics of `dhpo-suite compare` (`dhpo_suite.science`'s face: per-run metrics, per-group intervals,
paired differences, curve bands) imported, never re-derived, behind st.cache_data keyed by the runs' versions.

Curves are averaged on a common step grid: a group's curve has a point only at the steps where every run of
the group logged the metric (its n is the group's size there), so different runs never contribute at adjacent
steps (a mean that zigzags between subsets of seeds). The held-out reward keeps step 0 (before training).

A bootstrap interval costs ~1 ms (10,000 resamples) and a band needs one per step and group: 1.7 s per metric
for two groups × three seeds × 1000 steps. So every statistic is computed once per version of the selection
(a run added, ended or a step committed) and reused by every rerun of the page, and a band is bootstrapped
only at the steps its curve draws: the min/max thinning of the mean on the grid (figures.curves.minmax_positions),
where each value is exactly compare's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import data
from dhpo_suite.dashboard.figures.curves import minmax_positions
from dhpo_suite.runs import RunFormatError, RunReader
from dhpo_suite import science

__all__ = ["selection_version", "sweep", "summary", "differences", "one_apart", "bands", "common_grid", "fmt_sig",
           "BAND_POINTS", "CURVES"]

BAND_POINTS = 150
"""Most steps per group at which a band is bootstrapped and drawn."""
CURVES = {science.HELDOUT: "Held-out reward", "entropy/mean": "Token entropy (nats)",
          "length/mean": "Response length (tokens)", "reward/mean": "Training reward"}
_TTL = 3600


def selection_version(table: pd.DataFrame, runs: list[str]) -> tuple:
    """((run, path, run_version), ...) of `runs` (keys of data.runs_table): changes when one of them commits a
    step or ends, and with the selection itself."""
    return tuple((r, str(table.at[r, "path"]), data.run_version(str(table.at[r, "path"]))) for r in runs)


@st.cache_data(max_entries=8, ttl=_TTL, show_spinner="Reading the runs…")
def sweep(version: tuple) -> tuple[pd.DataFrame, pd.DataFrame, list[str], pd.DataFrame]:
    """(metrics: one row per run with its group label, seed and compare's per-run metrics; scalars: the runs'
    curves stacked with label, seed and run; problems; settings: one row per run, the differing settings)."""
    loaded, problems = [], []
    for run, path, v in version:
        try:
            reader = RunReader(path)
        except RunFormatError as e:
            problems.append(str(e))
            continue
        frame, probs = data.scalars(path, v)
        problems += probs
        if not frame.empty:
            loaded.append((run, reader.manifest, frame))
    settings = {run: science.run_settings(m.to_dict()) for run, m, _ in loaded}
    base = dict(zip([run for run, _, _ in loaded], science.run_labels([m for _, m, _ in loaded])))
    labels = science.group_labels(settings, base)
    runs = [(run, labels[run], m.seed, m.status, frame) for run, m, frame in loaded]
    keep = ("step", *CURVES, science.HELDOUT_INITIAL)
    parts = [frame[[c for c in keep if c in frame]].assign(label=label, seed=seed, run=run)
             for run, label, seed, _, frame in runs]
    scalars = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["step", "label", "seed", "run"])
    keys = science.differing(settings)
    table = pd.DataFrame([{"run": run, "group": label, "seed": seed, **{k: settings[run].get(k, "—") for k in keys}}
                          for run, label, seed, _, _ in runs])
    return science.metrics_of(runs), scalars, problems, table


@st.cache_data(max_entries=8, ttl=_TTL, show_spinner="Bootstrapping the intervals…")
def summary(version: tuple) -> pd.DataFrame:
    """compare.summarize over the groups: per group, per metric, the mean and its 95 % interval, and n."""
    return science.summarize(sweep(version)[0])


@st.cache_data(max_entries=32, ttl=_TTL, show_spinner=False)
def one_apart(version: tuple, baseline: str) -> dict[str, str]:
    """{group: the one setting it changes} of the groups one setting apart from `baseline`
    (science.groups.one_apart_from over the runs' manifests)."""
    metrics = sweep(version)[0]
    labels = dict(zip(metrics["run"], metrics["label"]))
    settings = {}
    for run, path, _ in version:
        if run in labels:
            try:
                settings[run] = science.run_settings(RunReader(path).manifest.to_dict())
            except RunFormatError:
                continue
    return science.one_apart_from(baseline, settings, labels)


@st.cache_data(max_entries=32, ttl=_TTL, show_spinner="Bootstrapping the differences…")
def differences(version: tuple, baseline: str) -> pd.DataFrame:
    """compare.paired_differences against the group `baseline`, over shared seeds, of the groups that differ
    from it in exactly one setting (column `differs in`): a difference between groups that differ in lr, task
    and model at once measures none of them (issue 43)."""
    apart = one_apart(version, baseline)
    metrics = sweep(version)[0]
    diffs = science.paired_differences(metrics[metrics["label"].isin([baseline, *apart])], baseline)
    if diffs.empty:
        return diffs
    return diffs.assign(**{"differs in": diffs["label"].map(apart)})


def fmt_sig(iv, sig: int = 3) -> str:
    """An interval with `sig` significant digits of its largest end, every number to the same decimals:
    `0.000512 [0.000431, 0.000590]`, `182 [171, 193]` (a fixed 3 decimals read 0.000 [-0.000, 0.000] for a KL
    of order 1e-4); `—` when there is no value."""
    mean, lo, hi = (float(getattr(iv, k, np.nan)) for k in ("mean", "lo", "hi"))
    if np.isnan(mean):
        return "—"
    top = max(abs(v) for v in (mean, lo, hi) if not np.isnan(v))
    decimals = 0 if top == 0 else max(0, sig - 1 - int(np.floor(np.log10(top))))
    text = f"{mean:.{decimals}f}"
    return text if np.isnan(lo) else f"{text} [{lo:.{decimals}f}, {hi:.{decimals}f}]"


def common_grid(mine: pd.DataFrame, metric: str) -> np.ndarray:
    """The steps at which every run of one group logged `metric` (sorted)."""
    wide = mine.pivot_table(index="step", columns="run", values=metric, aggfunc="last")
    wide = wide.reindex(columns=mine["run"].unique())
    return wide.index.to_numpy()[wide.notna().all(axis=1).to_numpy()]


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner="Bootstrapping the bands…")
def bands(version: tuple, metric: str, label: str, n: int = BAND_POINTS) -> pd.DataFrame:
    """compare.curve_bands of one group's `metric` at its drawn steps of the common grid (columns label, step,
    mean, lo, hi, n); the held-out reward keeps its step 0, the value before training."""
    scalars = sweep(version)[1]
    mine = scalars[scalars["label"] == label]
    empty = pd.DataFrame(columns=["label", "step", "mean", "lo", "hi", "n"])
    if mine.empty or metric not in mine or mine[metric].isna().all():
        return empty
    # Drawn: every grid step when there are at most n, else the first, the last and the min/max of the mean
    # across runs in each of n/2 buckets (spikes kept).
    mean = mine[mine["step"].isin(common_grid(mine, metric))].groupby("step")[metric].mean()
    steps = mean.index.to_numpy()[minmax_positions(mean.to_numpy(), n)]
    # Every run is its own column of compare's per-step pivot (two runs of one seed are still two runs);
    # values off the drawn grid are blanked, and the rows that carry the pre-training value are kept.
    sub = mine.assign(seed=mine["run"])
    sub.loc[~sub["step"].isin(steps), metric] = np.nan
    out = science.curve_bands(sub, metric)
    return out[out["step"].isin(steps) | ((out["step"] == 0) & (metric == science.HELDOUT))].reset_index(drop=True)
