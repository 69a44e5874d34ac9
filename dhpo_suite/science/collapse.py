"""Entropy-collapse detector: the step where a run's entropy and response length fall off their early plateau.

The rule (mirrored in docs/dashboard.md), applied to each series indexed by training step:

1. plateau P = median of the raw series over the early window: the first `plateau_frac` of the logged steps,
   at least `min_plateau` points (the median ignores the odd spike in the first steps);
2. the series is smoothed with a centred rolling median of `window` points (a median, so one bad batch neither
   triggers nor hides a collapse; centred, so the flagged step is the onset, not the onset plus a lag);
3. the series has collapsed at step s (after the early window) when the smoothed value stays <= (1 - drop)·P
   for `patience` consecutive logged steps starting at s;
4. the run has collapsed at max(s_entropy, s_length): the first step by which BOTH have collapsed. An entropy
   drop with a steady length (or the reverse) is reported per series but does not flag the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

__all__ = ["CollapseRule", "SeriesCollapse", "Collapse", "series_collapse", "detect_collapse", "verdict"]


@dataclass(frozen=True)
class CollapseRule:
    """Parameters of the collapse rule (see the module docstring)."""

    entropy_drop: float = 0.5
    """Relative drop of the smoothed entropy below its plateau that counts as collapse."""
    length_drop: float = 0.3
    """Relative drop of the smoothed mean response length below its plateau that counts as collapse."""
    plateau_frac: float = 0.1
    """Fraction of the logged steps that form the early plateau."""
    min_plateau: int = 3
    """Fewest points in the early plateau."""
    window: int = 5
    """Points in the centred rolling median (odd; a flag looks at most window // 2 steps ahead)."""
    patience: int = 5
    """Consecutive logged steps the smoothed series must stay below the threshold."""

    def __post_init__(self) -> None:
        for name in ("entropy_drop", "length_drop", "plateau_frac"):
            value = getattr(self, name)
            if not 0.0 < value < 1.0:
                raise ValueError(f"CollapseRule.{name} must lie in (0, 1), got {value}")
        for name in ("min_plateau", "window", "patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"CollapseRule.{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class SeriesCollapse:
    """Collapse of one series: `step` is None when it did not collapse (or could not be judged: `reason`)."""

    step: int | None
    plateau: float
    threshold: float
    reason: str = ""


@dataclass(frozen=True)
class Collapse:
    """Run-level verdict: `step` is the first step by which entropy and length have both collapsed."""

    step: int | None
    entropy: SeriesCollapse
    length: SeriesCollapse
    rule: CollapseRule = field(default_factory=CollapseRule)


def series_collapse(series: pd.Series, drop: float, rule: CollapseRule = CollapseRule()) -> SeriesCollapse:
    """Apply steps 1-3 of the rule to one series (index: step, values: the metric; NaNs are dropped)."""
    s = series.dropna().sort_index()
    n_plateau = max(rule.min_plateau, int(np.ceil(rule.plateau_frac * len(s))))
    if len(s) < n_plateau + rule.patience:
        return SeriesCollapse(None, float("nan"), float("nan"), f"too few steps ({len(s)})")
    plateau = float(s.iloc[:n_plateau].median())
    threshold = (1.0 - drop) * plateau
    if not plateau > 0:
        return SeriesCollapse(None, plateau, threshold, "plateau is not positive")
    smooth = s.rolling(rule.window, center=True, min_periods=1).median().iloc[n_plateau:]
    # Windows of `patience` consecutive points all below (len(s) >= n_plateau + patience: at least one window).
    below = np.lib.stride_tricks.sliding_window_view((smooth <= threshold).to_numpy(), rule.patience)
    hits = np.flatnonzero(below.all(axis=1))
    step = int(smooth.index[hits[0]]) if len(hits) else None
    return SeriesCollapse(step, plateau, threshold)


def detect_collapse(entropy: pd.Series, length: pd.Series, rule: CollapseRule = CollapseRule()) -> Collapse:
    """The run's collapse verdict from its per-step mean entropy and mean response length."""
    ent = series_collapse(entropy, rule.entropy_drop, rule)
    lng = series_collapse(length, rule.length_drop, rule)
    step = max(ent.step, lng.step) if ent.step is not None and lng.step is not None else None
    return Collapse(step, ent, lng, rule)


def verdict(c: Collapse) -> str:
    """One line for the verdict table: what collapsed, and when."""
    e, ln = c.entropy.step, c.length.step
    if c.step is not None:
        return f"collapsed at step {c.step} (entropy from {e}, length from {ln})"
    if e is not None:
        return f"entropy collapsed at step {e}; length held"
    if ln is not None:
        return f"length collapsed at step {ln}; entropy held"
    reason = c.entropy.reason or c.length.reason
    return f"not judged: {reason}" if reason else "no collapse"
