"""The collapse rule (dhpo_suite.science.collapse) on hand-made series."""

import numpy as np
import pandas as pd
import pytest

from dhpo_suite.science.collapse import CollapseRule, detect_collapse, series_collapse, verdict


def step_series(n=100, at=60, before=1.0, after=0.1, start=0):
    steps = np.arange(start, start + n)
    return pd.Series(np.where(steps >= start + at, after, before), index=steps, dtype=float)


def test_onset_of_a_sharp_drop_is_the_flagged_step():
    sc = series_collapse(step_series(at=60), drop=0.5)
    assert sc.step == 60
    assert sc.plateau == pytest.approx(1.0)
    assert sc.threshold == pytest.approx(0.5)


def test_steps_are_read_from_the_index_not_positions():
    s = step_series(n=50, at=30, start=1000)
    assert series_collapse(s, 0.5).step == 1030
    sparse = pd.Series([1.0] * 20 + [0.1] * 20, index=np.arange(0, 400, 10))  # logged every 10 steps
    assert series_collapse(sparse, 0.5).step == 200


def test_a_short_dip_or_spike_is_not_a_collapse():
    s = step_series(at=1000)  # never drops
    s.iloc[50:52] = 0.0  # two bad steps: the 5-point median ignores them
    s.iloc[70:73] = 0.0  # three bad steps: the median follows, but patience (5) is not reached
    assert series_collapse(s, 0.5).step is None


def test_a_moderate_drop_is_below_the_threshold_only_when_deep_enough():
    s = step_series(at=40, after=0.6)  # a 40 % drop
    assert series_collapse(s, 0.5).step is None
    assert series_collapse(s, 0.3).step == 40


def test_plateau_is_the_median_of_the_early_window_so_a_warmup_spike_does_not_move_it():
    s = step_series(n=100, at=60)
    s.iloc[0] = 50.0  # a first-step outlier
    sc = series_collapse(s, 0.5)
    assert sc.plateau == pytest.approx(1.0) and sc.step == 60


def test_a_gradual_decline_is_flagged_where_it_crosses_the_threshold():
    steps = np.arange(200)
    s = pd.Series(1.0 - steps / 250, index=steps)  # 1.0 → 0.204; threshold 0.5·plateau
    sc = series_collapse(s, 0.5)
    expected = int(np.flatnonzero(s.to_numpy() <= sc.threshold)[0])
    assert abs(sc.step - expected) <= 1


def test_nans_are_ignored_and_too_short_series_are_not_judged():
    s = step_series(at=60)
    s.iloc[::7] = np.nan
    assert series_collapse(s, 0.5).step == 60
    short = series_collapse(step_series(n=6, at=3), 0.5)
    assert short.step is None and "too few" in short.reason


def test_non_positive_plateau_cannot_collapse():
    sc = series_collapse(pd.Series(np.zeros(50)), 0.5)
    assert sc.step is None and "not positive" in sc.reason


def test_the_run_collapses_when_both_entropy_and_length_have():
    entropy, length = step_series(at=40), step_series(at=55, before=300.0, after=100.0)
    c = detect_collapse(entropy, length)
    assert (c.entropy.step, c.length.step, c.step) == (40, 55, 55)


def test_entropy_alone_does_not_flag_the_run():
    c = detect_collapse(step_series(at=40), step_series(at=1000, before=300.0))
    assert c.entropy.step == 40 and c.length.step is None and c.step is None


def test_verdict_says_what_collapsed_and_when():
    steady, short = step_series(at=1000), step_series(n=5)
    assert verdict(detect_collapse(step_series(at=40), step_series(at=55))) == \
        "collapsed at step 55 (entropy from 40, length from 55)"
    assert verdict(detect_collapse(step_series(at=40), steady)) == "entropy collapsed at step 40; length held"
    assert verdict(detect_collapse(steady, step_series(at=40))) == "length collapsed at step 40; entropy held"
    assert verdict(detect_collapse(steady, steady)) == "no collapse"
    assert verdict(detect_collapse(short, short)).startswith("not judged: too few steps")


def test_empty_inputs_give_no_verdict():
    c = detect_collapse(pd.Series(dtype=float), pd.Series(dtype=float))
    assert c.step is None and c.entropy.step is None


@pytest.mark.parametrize("field,value", [("entropy_drop", 0.0), ("length_drop", 1.0), ("plateau_frac", 1.5),
                                         ("window", 0), ("patience", 0)])
def test_rule_rejects_bad_parameters_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        CollapseRule(**{field: value})
