"""Paired statistics for a few seeds: what `dhpo-suite compare` says about a contrast (arm − baseline per seed).

Why these and not the percentile bootstrap: with 5 seeds a 95 % percentile bootstrap interval covers ~84 % of the
time (it cannot see beyond the observed spread; tests/science/test_stats.py simulates it), while the Student-t
interval is exact for normal differences and close for mildly skewed ones. So, per contrast, over the n seeds
both arms share:

    paired_test      mean difference, its 95 % t-interval and two-sided t-test p (scipy.stats.ttest_rel; `t_test_p`
                     says what it gives when every difference is the same), and the exact sign-flip permutation p
                     (all 2^n sign patterns: no normality assumed)
    holm             Holm's step-down adjustment of the p-values of a declared family (Holm 1979)
    tost             two one-sided t-tests for "equal within ±margin" (Schuirmann 1987): p = the larger one-sided p
    prob_improvement P(arm > baseline) over all pairs of runs, ties counting one half (rliable's probability of
                     improvement, Agarwal et al. 2021) = Mann-Whitney U / (n·m)
    detectable       the difference a paired t-test of n seeds detects with 80 % power at two-sided α = 0.05, for
                     the observed paired sd (noncentral t); `seeds_needed` inverts it
    bootstrap_interval  the percentile bootstrap, refused below BOOTSTRAP_MIN_N runs

No interval or p below MIN_SEEDS seeds (WHY_MIN_SEEDS says why). No torch: the dashboard imports this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import optimize, stats

__all__ = ["BOOTSTRAP_MIN_N", "MIN_SEEDS", "WHY_MIN_SEEDS", "PairedTest", "bootstrap_interval", "detectable",
           "holm", "paired_test", "power", "prob_improvement", "seeds_needed", "sign_flip_p", "t_interval", "t_test_p",
           "tost"]

MIN_SEEDS = 3
BOOTSTRAP_MIN_N = 20
WHY_MIN_SEEDS = ("fewer than 3 seeds: the spread is estimated from at most one difference (the 95 % t quantile is "
                 "12.7 at 1 degree of freedom) and the exact sign-flip p cannot fall below 0.5")


@dataclass(frozen=True)
class PairedTest:
    """One contrast over n paired seeds. lo/hi/p/p_sign_flip are NaN below MIN_SEEDS, with `why` saying so."""

    n: int
    mean: float
    sd: float
    lo: float
    hi: float
    p: float
    p_sign_flip: float
    why: str = ""


def _finite(values) -> np.ndarray:
    x = np.asarray(values, dtype=float)
    return x[np.isfinite(x)]


def t_interval(d, confidence: float = 0.95) -> tuple[float, float]:
    """mean ± t_{(1+c)/2, n−1} · sd/√n (sd with n−1); a point when every difference is the same."""
    d = _finite(d)
    n, m, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    return m - half, m + half


def t_test_p(d) -> float:
    """Two-sided one-sample t-test p of mean 0 over the finite differences `d` (n ≥ 2): scipy.stats.ttest_1samp's
    p, and the one p of every paired t-test here (seeds in `compare`, problems in `eval-compare`).

    Where every difference is the same, sd = 0 and t = mean/0. A nonzero mean gives t = ±inf and p = 0.0, as
    scipy does: the arms differ by the same amount every time. All differences 0 gives 0/0, which scipy returns
    as NaN; here it is 1.0: the observed mean sits exactly on the null, so t = 0 for any spread and there is no
    evidence of a difference. A NaN would read as "not computed" and `holm` would drop it from the family,
    making the other contrasts' adjusted p smaller; 1.0 keeps it in (the sign-flip p is 1.0 there too)."""
    d = _finite(d)
    n, m, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        return 1.0 if m == 0 else 0.0
    return float(2 * stats.t.sf(abs(m) / (sd / math.sqrt(n)), n - 1))


def sign_flip_p(d) -> float:
    """Exact two-sided sign-flip permutation p of the mean: the share of the 2^n sign patterns whose |mean| is at
    least the observed |mean| (scipy.stats.permutation_test, permutation_type='samples', gives the same)."""
    d = _finite(d)
    n = len(d)
    if n > 24:
        raise ValueError(f"sign_flip_p: exact enumeration of 2^{n} patterns is too large (at most 24 seeds)")
    signs = 1 - 2 * ((np.arange(2**n)[:, None] >> np.arange(n)) & 1)  # (2^n, n) of ±1
    null = np.abs(signs @ d) / n
    observed = abs(float(d.mean()))
    return float(np.mean(null >= observed * (1 - 1e-12) - 1e-15))  # ties within rounding count as extreme


def paired_test(d) -> PairedTest:
    """The contrast of differences `d` (arm − baseline per seed; NaNs dropped)."""
    d = _finite(d)
    n = len(d)
    mean = float(d.mean()) if n else math.nan
    sd = float(d.std(ddof=1)) if n > 1 else math.nan
    if n < MIN_SEEDS:
        return PairedTest(n, mean, sd, math.nan, math.nan, math.nan, math.nan, WHY_MIN_SEEDS)
    lo, hi = t_interval(d)
    return PairedTest(n, mean, sd, lo, hi, t_test_p(d), sign_flip_p(d))


def holm(p) -> np.ndarray:
    """Holm-adjusted p-values (NaNs stay NaN and do not count in the family): with the m p-values sorted
    ascending, p̃_(i) = max_{j ≤ i} min(1, (m − j + 1) · p_(j)); reject where p̃ < α."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, math.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    out[order] = np.maximum.accumulate(scaled)
    return out


def tost(d, margin: float) -> float:
    """Equivalence within ±margin by two one-sided t-tests (H0: mean ≤ −margin; H0: mean ≥ +margin): the larger
    of the two one-sided p-values; p < α means "equal within the margin". NaN below MIN_SEEDS."""
    d = _finite(d)
    n = len(d)
    if n < MIN_SEEDS:
        return math.nan
    if margin <= 0:
        raise ValueError(f"tost: the margin must be > 0, got {margin}")
    m, se = float(d.mean()), float(d.std(ddof=1)) / math.sqrt(n)
    if se == 0:
        return 0.0 if -margin < m < margin else 1.0
    p_low = float(stats.t.sf((m + margin) / se, n - 1))   # H0: mean ≤ −margin
    p_high = float(stats.t.cdf((m - margin) / se, n - 1))  # H0: mean ≥ +margin
    return max(p_low, p_high)


def prob_improvement(arm, baseline) -> float:
    """P(a run of `arm` beats a run of `baseline`), ties one half, over all pairs (higher is better)."""
    x, y = _finite(arm), _finite(baseline)
    if not len(x) or not len(y):
        return math.nan
    diff = x[:, None] - y[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def power(effect: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t-test of n seeds for a true mean difference `effect` (noncentral t,
    both tails)."""
    df, ncp = n - 1, abs(effect) / sd * math.sqrt(n)
    crit = float(stats.t.ppf(1 - alpha / 2, df))
    value = float(stats.nct.sf(crit, df, ncp) + stats.nct.cdf(-crit, df, ncp))
    return value if math.isfinite(value) else 1.0  # scipy's nct gives NaN far in its tail (ncp ≳ 40)


def detectable(sd: float, n: int, target: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest |mean difference| the paired t-test of n seeds detects with power `target` (NaN when sd
    is not positive or n < 2)."""
    if not (sd > 0) or n < 2:
        return math.nan
    return float(optimize.brentq(lambda e: power(e, sd, n, alpha) - target, 1e-9 * sd, 50 * sd, xtol=1e-12 * sd))


def seeds_needed(effect: float, sd: float, target: float = 0.8, alpha: float = 0.05, most: int = 1000) -> int | None:
    """The fewest seeds whose paired t-test detects `effect` with power `target`; None beyond `most`."""
    if not (sd > 0) or effect == 0 or not math.isfinite(effect):
        return None
    for n in range(2, most + 1):
        if power(effect, sd, n, alpha) >= target:
            return n
    return None


def bootstrap_interval(x, seed: int = 0) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the mean (scipy.stats.bootstrap, 10,000 resamples); refused below
    BOOTSTRAP_MIN_N values, where it is too narrow (see the module docstring)."""
    x = _finite(x)
    if len(x) < BOOTSTRAP_MIN_N:
        raise ValueError(f"bootstrap_interval: {len(x)} values; the percentile bootstrap needs at least "
                         f"{BOOTSTRAP_MIN_N} (below, use t_interval)")
    if np.ptp(x) == 0:
        return float(x[0]), float(x[0])
    ci = stats.bootstrap((x,), np.mean, n_resamples=10_000, method="percentile", confidence_level=0.95,
                         rng=np.random.default_rng(seed)).confidence_interval
    return float(ci.low), float(ci.high)
