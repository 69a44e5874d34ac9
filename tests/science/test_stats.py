"""dhpo_suite.science.stats pinned against numbers from outside it: scipy's own tests (ttest_rel and its
confidence interval, permutation_test with permutation_type='samples', ttest_1samp one-sided, mannwhitneyu),
R's documented power.t.test example, Holm's step-down rule worked by hand (R's p.adjust gives the same), and
simulations: the t-interval's coverage at n = 5 (the percentile bootstrap's, for contrast), and the power of the
detectable difference."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from dhpo_suite.science import stats

ARM = np.array([0.31, 0.28, 0.35, 0.30, 0.33, 0.36, 0.29])
BASE = np.array([0.29, 0.27, 0.30, 0.31, 0.30, 0.33, 0.25])


def test_paired_test_is_scipys_ttest_rel_with_its_interval():
    t = stats.paired_test(ARM - BASE)
    ref = sps.ttest_rel(ARM, BASE)
    ci = ref.confidence_interval(0.95)
    assert t.n == 7 and t.mean == pytest.approx(np.mean(ARM - BASE))
    assert t.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert (t.lo, t.hi) == (pytest.approx(ci.low, rel=1e-10), pytest.approx(ci.high, rel=1e-10))
    assert t.sd == pytest.approx(np.std(ARM - BASE, ddof=1))


@pytest.mark.parametrize("d", [ARM - BASE, np.array([0.1, -0.2, 0.05, 0.3]), np.array([1.0, 2.0, 3.0]),
                               np.array([0.5, -0.5, 0.25, -0.25, 0.0, 1.0])])
def test_sign_flip_p_is_scipys_exact_permutation_test(d):
    ref = sps.permutation_test((d,), lambda x, axis: np.mean(x, axis=axis), vectorized=True,
                               permutation_type="samples", n_resamples=np.inf, alternative="two-sided")
    assert stats.sign_flip_p(d) == pytest.approx(ref.pvalue, rel=1e-12)


def test_sign_flip_p_cannot_go_below_two_over_two_to_the_n():
    assert stats.sign_flip_p([1.0, 2.0, 3.0, 4.0, 5.0]) == pytest.approx(2 / 32)  # all positive: 2 of 32 extreme


def test_fewer_than_three_seeds_give_no_interval_and_say_why():
    t = stats.paired_test([0.0, 0.0])
    assert t.n == 2 and t.mean == 0.0
    assert all(math.isnan(v) for v in (t.lo, t.hi, t.p, t.p_sign_flip))
    assert t.why.startswith("fewer than 3 seeds")
    assert math.isnan(stats.tost([0.01, 0.02], 0.1))
    ok = stats.paired_test([0.0, 0.0, 0.0])  # three identical differences: a point interval, p = 1
    assert (ok.lo, ok.hi, ok.p, ok.why) == (0.0, 0.0, 1.0, "")


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1 = 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    # (R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02)
    assert stats.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.8]) == pytest.approx([1.0, 1.0])  # capped at 1
    out = stats.holm([0.01, math.nan, 0.02])  # a NaN is not part of the family (m = 2)
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


@pytest.mark.parametrize("margin", [0.01, 0.03, 0.1])
def test_tost_is_two_one_sided_scipy_t_tests(margin):
    d = ARM - BASE
    lower = sps.ttest_1samp(d, -margin, alternative="greater").pvalue
    upper = sps.ttest_1samp(d, margin, alternative="less").pvalue
    assert stats.tost(d, margin) == pytest.approx(max(lower, upper), rel=1e-10)
    with pytest.raises(ValueError, match="margin"):
        stats.tost(d, 0.0)


def test_prob_improvement_is_mann_whitney_u_over_pairs():
    x, y = np.array([0.3, 0.5, 0.5, 0.9]), np.array([0.5, 0.1, 0.2])
    assert stats.prob_improvement(x, y) == pytest.approx(sps.mannwhitneyu(x, y).statistic / 12)
    assert stats.prob_improvement(x, y) == pytest.approx((2 + 2.5 + 2.5 + 3) / 12)  # per x: wins + ties/2


def test_power_matches_rs_documented_power_t_test():
    # R: power.t.test(n = 20, delta = 1) -> power = 0.8689528 (two-sample: df 38, noncentrality sqrt(10)). A
    # paired test of 39 seeds has df 38; effect sqrt(10/39) sd gives the same noncentrality sqrt(10).
    assert stats.power(math.sqrt(10 / 39), 1.0, 39) == pytest.approx(0.8689528, abs=1e-6)


def test_detectable_difference_has_80_percent_power_in_simulation():
    rng = np.random.default_rng(7)
    n, sd = 10, 0.05
    effect = stats.detectable(sd, n)
    assert effect == pytest.approx(0.05 * 0.996, rel=1e-3)  # about one sd at 10 seeds; the simulation below checks it
    d = rng.normal(effect, sd, size=(20_000, n))
    t = d.mean(1) / (d.std(1, ddof=1) / math.sqrt(n))
    assert np.mean(np.abs(t) > sps.t.ppf(0.975, n - 1)) == pytest.approx(0.80, abs=0.015)
    assert stats.seeds_needed(effect * 1.001, sd) == n and stats.seeds_needed(effect * 0.9, sd) > n
    assert math.isnan(stats.detectable(0.0, 5)) and stats.seeds_needed(0.0, sd) is None


def test_t_interval_covers_95_percent_at_five_seeds_where_the_percentile_bootstrap_does_not():
    rng = np.random.default_rng(0)
    reps, n = 4000, 5
    d = rng.normal(0.3, 1.0, size=(reps, n))
    half = sps.t.ppf(0.975, n - 1) * d.std(1, ddof=1) / math.sqrt(n)
    t_cover = np.mean(np.abs(d.mean(1) - 0.3) <= half)
    assert t_cover >= 0.93
    boot = d[np.arange(reps)[:, None, None], rng.integers(0, n, size=(reps, 1000, n))].mean(2)  # (reps, 1000)
    lo, hi = np.quantile(boot, [0.025, 0.975], axis=1)
    b_cover = np.mean((lo <= 0.3) & (0.3 <= hi))
    assert b_cover < 0.90  # 0.842: why compare refuses it below 20 runs


def test_bootstrap_only_from_twenty_values():
    with pytest.raises(ValueError, match="at least 20"):
        stats.bootstrap_interval(np.arange(19.0))
    lo, hi = stats.bootstrap_interval(np.arange(20.0))
    assert lo < 9.5 < hi
