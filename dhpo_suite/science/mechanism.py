"""The mechanism table of a sweep: per label, the trust-region leak (dhpo_suite.science.leak) beside what it
should move: the KL per step, the one-step update's size against the baseline's (update_distance.json), the final
held-out reward and its change from the start. benchmarks/reproduction.py writes it as the report's "Mechanism"
section; every number is from the kept data.

Orders are read off the table, not asserted: `ordered` sorts the labels by leak (ties by KL per step) and says,
per outcome, whether it moves monotonically along that order.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dhpo_suite.science.compare import HELDOUT_INITIAL, Interval, interval
from dhpo_suite.science.leak import label_leaks

__all__ = ["Row", "heldout_changes", "mechanism_rows", "monotone", "update_sizes"]


@dataclass(frozen=True)
class Row:
    label: str
    leak: Interval
    branch: str
    binding: float
    sequence_above: float
    kl: Interval
    update: tuple[float, float, float]  # min, mean, max over checkpoints of its one-step update / the baseline's
    final: Interval
    change: Interval  # final held-out reward − the run's held-out reward before training
    up: int  # seeds whose held-out reward rose


def update_sizes(source: Path) -> dict[str, tuple[float, float, float]]:
    """{label: (min, mean, max) over checkpoints of its one-step update size / the baseline's}, from
    update_distance.json (empty without one)."""
    path = source / "update_distance.json"
    if not path.exists():
        return {}
    data = json.loads(path.read_text())
    ratios: dict[str, list[float]] = {}
    for cp in data["checkpoints"]:
        arms = cp.get("arms", {})
        base = arms.get(data.get("baseline", "grpo"), {}).get("update")
        for label, arm in arms.items():
            if base:
                ratios.setdefault(label, []).append(arm["update"] / base)
    return {k: (min(v), float(np.mean(v)), max(v)) for k, v in ratios.items()}


def heldout_changes(metrics: pd.DataFrame, scalars: pd.DataFrame) -> pd.Series:
    """Per run (index: run): final held-out reward − the held-out reward before training (NaN without it)."""
    if HELDOUT_INITIAL not in scalars:
        return pd.Series(np.nan, index=metrics["run"])
    first = scalars.groupby("run")[HELDOUT_INITIAL].first()
    return metrics.set_index("run")["final_reward"] - first.reindex(metrics["run"]).to_numpy()


def mechanism_rows(source: Path, metrics: pd.DataFrame, scalars: pd.DataFrame) -> list[Row]:
    """One Row per label that has completed runs, ordered by leak, then KL per step (the `ordered` order)."""
    sizes = update_sizes(source)
    change = heldout_changes(metrics, scalars)
    rows = []
    for x in label_leaks(scalars):
        m = metrics[metrics["label"] == x.label]
        d = change.reindex(m["run"]).to_numpy(dtype=float)
        rows.append(Row(x.label, x.leak, x.branch, x.binding, x.sequence_above, interval(m["mean_kl"]),
                        sizes.get(x.label, (math.nan,) * 3), interval(m["final_reward"]), interval(d),
                        int(np.sum(d > 0))))
    return sorted(rows, key=lambda r: (np.nan_to_num(r.leak.mean, nan=-1.0), r.kl.mean))


def monotone(values: list[float]) -> str:
    """"rises", "falls", "does not move monotonically" or "stays within 5 %" along a list (NaNs: "is not
    measured ...")."""
    v = np.asarray(values, dtype=float)
    if np.isnan(v).any() or len(v) < 2:
        return "is not measured for every arm"
    if np.ptp(v) <= 0.05 * np.abs(v).mean():  # a few % apart is no order to read
        return "stays within 5 %"
    if np.all(np.diff(v) > 0):
        return "rises"
    if np.all(np.diff(v) < 0):
        return "falls"
    return "does not move monotonically"
