"""benchmarks/reproduction.py's verdict rule: the claimed side of a paired-difference interval, for claims of a
positive (DHPO entropy higher) and a negative (branch clipping oscillates less) difference."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from dhpo_suite.science.compare import Interval

_spec = importlib.util.spec_from_file_location(
    "reproduction", Path(__file__).parents[2] / "benchmarks" / "reproduction.py")
reproduction = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reproduction)


def test_verdict_reads_the_interval_on_the_claimed_side():
    nan = float("nan")
    assert reproduction.verdict(Interval(0.02, 0.01, 0.03, 4), +1) == "reproduced"
    assert reproduction.verdict(Interval(-0.02, -0.03, -0.01, 4), +1).startswith("not reproduced")
    assert reproduction.verdict(Interval(-0.02, -0.03, -0.01, 4), -1) == "reproduced"
    assert reproduction.verdict(Interval(0.02, 0.01, 0.03, 4), -1).startswith("not reproduced")
    for sign in (+1, -1):  # an interval containing 0 decides nothing, whichever side is claimed
        assert reproduction.verdict(Interval(-0.006, -0.032, 0.027, 4), sign).startswith("inconclusive")
    assert reproduction.verdict(Interval(0.1, nan, nan, 1), +1).startswith("inconclusive")
