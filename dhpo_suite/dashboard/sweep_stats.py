"""The Sweep page's numbers: `dhpo_suite.science.compare` (the statistics of `dhpo-suite compare`) behind
st.cache_data, keyed by the runs directory's version, and its curve bands computed only at the steps drawn.

A bootstrap interval costs ~1 ms (10,000 resamples), and a curve band needs one per step and algorithm: 1.7 s
per metric for two algorithms × three seeds × 1000 steps. So every statistic is computed once per version of
the sweep (a run added, ended or a step committed) and reused by every rerun of the page (a baseline or
algorithm picked, a live refresh), and a band is bootstrapped at the steps its curve draws: those of the
mean's min/max thinning (figures.curves.minmax_positions), where each value is exactly compare's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import data
from dhpo_suite.dashboard.figures.curves import minmax_positions
from dhpo_suite.science import compare as cmp

__all__ = ["sweep_version", "sweep", "summary", "differences", "bands", "BAND_POINTS"]

BAND_POINTS = 150
"""Most steps per algorithm at which a band is bootstrapped and drawn."""
_TTL = 3600


def sweep_version(table: pd.DataFrame) -> tuple:
    """Changes when a run is added, ends, or commits a step (`table`: data.runs_table of the directory)."""
    return tuple((str(p), data.run_version(str(p))) for p in table["path"])


@st.cache_data(max_entries=8, ttl=_TTL, show_spinner="Reading the sweep…")
def sweep(root: str, version: tuple) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """compare.load_sweep(root): (per-run metrics, the runs' curves stacked, problems)."""
    return cmp.load_sweep(root)


@st.cache_data(max_entries=8, ttl=_TTL, show_spinner="Bootstrapping the intervals…")
def summary(root: str, version: tuple) -> pd.DataFrame:
    """compare.summarize of the sweep: per algorithm, per metric, the mean and its 95 % interval."""
    return cmp.summarize(sweep(root, version)[0])


@st.cache_data(max_entries=32, ttl=_TTL, show_spinner="Bootstrapping the differences…")
def differences(root: str, version: tuple, baseline: str) -> pd.DataFrame:
    """compare.paired_differences of the sweep against `baseline`."""
    return cmp.paired_differences(sweep(root, version)[0], baseline)


def drawn_steps(scalars: pd.DataFrame, metric: str, n: int = BAND_POINTS) -> np.ndarray:
    """The steps at which one algorithm's curve of `metric` is drawn: all when there are at most n, else the
    first, the last and the min/max of the across-seed mean in each of n/2 buckets (spikes kept)."""
    per_seed = scalars.dropna(subset=[metric]).groupby(["step", "seed"])[metric].last()
    mean = per_seed.groupby(level="step").mean()
    return mean.index.to_numpy()[minmax_positions(mean.to_numpy(), n)]


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner="Bootstrapping the bands…")
def bands(root: str, version: tuple, metric: str, label: str, n: int = BAND_POINTS) -> pd.DataFrame:
    """compare.curve_bands of one algorithm's `metric` at its drawn steps (the held-out reward keeps its
    step 0, the value before training)."""
    scalars = sweep(root, version)[1]
    mine = scalars[scalars["label"] == label]
    if mine.empty or metric not in mine:
        return pd.DataFrame(columns=["label", "step", "mean", "lo", "hi", "n"])
    steps = drawn_steps(mine, metric, n)
    keep = mine["step"].isin(steps)
    if cmp.HELDOUT_INITIAL in mine:  # the rows that carry the pre-training value feed compare's step 0
        keep |= mine[cmp.HELDOUT_INITIAL].notna()
    out = cmp.curve_bands(mine[keep], metric)
    return out[out["step"].isin(steps) | (out["step"] == 0)].reset_index(drop=True)
