"""Fixed bins and histogram percentiles."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dhpo_suite.train.telemetry.bins import entropy_edges, hist_quantile, log_ratio_edges


def test_log_ratio_edges_contain_the_bounds_and_are_increasing():
    for low, high in [(0.8, 1.28), (1 - 3e-4, 1 + 4e-4), (math.exp(-0.4), math.exp(0.4)), (0.0, 1.28), (None, None)]:
        e = log_ratio_edges(low, high)
        assert np.all(np.diff(e) > 0)
        if low is None:  # no trust region: the default 0.8 / 1.28 layout
            low, high = 0.8, 1.28
        lo = math.log(low) if low > 0 else -math.log(high)  # one-sided (CISPO): mirrored
        assert lo in e.tolist() and math.log(high) in e.tolist()
        assert e[0] < -19 and e[-1] > 19
    with pytest.raises(ValueError, match="low < high"):
        log_ratio_edges(1.2, 0.9)


def test_hist_quantile_edges_and_interpolation():
    edges = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    counts = np.array([0, 4, 0, 4])
    assert hist_quantile(edges, counts, 0.0) == 1.0  # first non-empty bin
    assert hist_quantile(edges, counts, 0.25) == 1.5
    assert hist_quantile(edges, counts, 0.5) == 2.0
    assert hist_quantile(edges, counts, 1.0) == 4.0
    assert math.isnan(hist_quantile(edges, np.zeros(4), 0.5))
    e = entropy_edges()
    data = np.random.default_rng(0).lognormal(-2, 2, 10_000)
    idx = np.clip(np.searchsorted(e[1:-1], data, side="right"), 0, len(e) - 2)
    h = np.bincount(idx, minlength=len(e) - 1)
    for q in (0.1, 0.5, 0.9, 0.99):
        assert hist_quantile(e, h, q, log=True) == pytest.approx(np.quantile(data, q), rel=0.05)
