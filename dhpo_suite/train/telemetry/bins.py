"""Fixed histogram bins and exactly-mergeable percentiles.

Every distribution and every percentile in a step record comes from a histogram with edges fixed by the
`dhpo_suite.runs.TelemetrySpec` (never by the data), so per-rank histograms add exactly and percentiles of the merged
histogram equal percentiles of the whole batch.

Resolutions (documented in docs/run-format.md):
- entropy: edge 0, then 50 log-spaced bins per decade on [1e-6, 1e2] nats (≤ 4.7 % relative bin width);
- mixing weight w: 500 uniform bins on [0, 1] (width 0.002);
- log-ratio (per branch): `n_inside` uniform bins between log(1-ε_low) and log(1+ε_high) (both edges
  exact), and `n_outside` bins on each side whose distance to the bound grows geometrically out to ±20.
Values outside the outermost edges are counted in the end bins (the objective clamps log-ratios anyway).
"""

from __future__ import annotations

import numpy as np

__all__ = ["entropy_edges", "entropy_coarse_edges", "weight_edges", "log_ratio_edges", "length_edges", "hist_quantile",
           "DEFAULT_BOUNDS"]

DEFAULT_BOUNDS = (0.8, 1.28)
"""Ratio-space bounds used to lay out log-ratio bins for a branch without a trust region."""
LOG_RATIO_EXTENT = 20.0


def entropy_edges(bins_per_decade: int = 50) -> np.ndarray:
    """[0, 1e-6, ..., 1e2]: a zero bin then log-spaced bins (nats)."""
    return np.concatenate([[0.0], np.logspace(-6, 2, 8 * bins_per_decade + 1)])


def entropy_coarse_edges() -> np.ndarray:
    """Entropy axis of the 2-D histograms: 5 bins per decade."""
    return entropy_edges(5)


def weight_edges(n: int = 500) -> np.ndarray:
    return np.linspace(0.0, 1.0, n + 1)


def length_edges(max_len: int, n: int = 64) -> np.ndarray:
    """n uniform bins on [0, max_len] tokens: response lengths and token positions."""
    return np.linspace(0.0, float(max_len), n + 1)


def log_ratio_edges(
    low: float | None, high: float | None, n_inside: int = 40, n_outside: int = 40
) -> np.ndarray:
    """Log-ratio bin edges containing log(low) and log(high) exactly (low/high in ratio space).

    A missing side (low <= 0 or None, high inf or None) mirrors the other bound; no bound at all: DEFAULT_BOUNDS.

    Inside the trust region: `n_inside` uniform bins. Outside: the k-th edge sits at distance
    d_k = geomspace(width_inside, 20, n_outside) from the bound, so resolution is finest near the clip.
    """
    # One-sided regions (CISPO's ε_low=1 gives low=0; high may be inf): mirror the finite bound.
    lo = float(np.log(low)) if low is not None and low > 0 else None
    hi = float(np.log(high)) if high is not None and np.isfinite(high) else None
    if lo is None and hi is None:
        lo, hi = (float(np.log(b)) for b in DEFAULT_BOUNDS)
    if lo is None:
        lo = -hi  # type: ignore[operator]  # hi is set: both None was handled above
    if hi is None:
        hi = -lo
    if not lo < hi:
        raise ValueError(f"trust region must satisfy low < high, got low={low}, high={high}")
    inside = np.linspace(lo, hi, n_inside + 1)
    inside[0], inside[-1] = lo, hi
    d = np.geomspace((hi - lo) / n_inside, LOG_RATIO_EXTENT, n_outside)
    return np.concatenate([(lo - d)[::-1], inside, hi + d])


def hist_quantile(edges: np.ndarray, counts: np.ndarray, q: float, log: bool = False) -> float:
    """q-quantile of a histogram, interpolating inside the bin (geometrically when `log` and edge > 0).

    A deterministic function of integer counts, so it is exactly the same for merged per-rank histograms
    and for the whole batch. NaN when the histogram is empty.
    """
    counts = np.asarray(counts, dtype=np.int64)
    total = int(counts.sum())
    if total == 0:
        return float("nan")
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q must lie in [0, 1], got {q}")
    cum = np.cumsum(counts)
    target = q * total
    if target <= 0:  # q = 0: the lower edge of the first non-empty bin
        return float(edges[int(np.argmax(counts > 0))])
    i = int(np.searchsorted(cum, target, side="left"))
    i = min(i, len(counts) - 1)
    before = cum[i - 1] if i > 0 else 0
    frac = 0.0 if counts[i] == 0 else float(np.clip((target - before) / counts[i], 0.0, 1.0))
    a, b = float(edges[i]), float(edges[i + 1])
    if log and a > 0:
        return float(a * (b / a) ** frac)
    return a + (b - a) * frac
