"""StepTimer: each second of a step is charged to exactly one phase, the innermost open one (the time/*_s metrics).

Driven by a fake clock, so the expected seconds are exact: written down from the schedule below, not measured.
"""

from __future__ import annotations

import pytest

from dhpo_suite.train.embedded import trainer
from dhpo_suite.train.embedded.trainer import StepTimer


class _Clock:
    now = 0.0


@pytest.fixture()
def clock(monkeypatch):
    c = _Clock()
    monkeypatch.setattr(trainer.time, "perf_counter", lambda: c.now)
    return c


def test_nested_phase_is_charged_to_the_inner_phase_only(clock):
    timer = StepTimer()
    with timer.phase("rollout"):  # 0 -> 3
        clock.now = 3.0
    clock.now = 4.0  # between phases (the advantages): charged to none
    with timer.phase("update"):  # 4 -> 6 update, 6 -> 6.5 telemetry, 6.5 -> 9 update, 9 -> 10 telemetry
        clock.now = 6.0
        with timer.phase("telemetry"):
            clock.now = 6.5
        clock.now = 9.0
        with timer.phase("telemetry"):
            clock.now = 10.0
    assert timer.s == {"rollout": 3.0, "update": 4.5, "telemetry": 1.5}


def test_a_phase_left_by_an_exception_is_still_charged(clock):
    timer = StepTimer()
    with pytest.raises(RuntimeError), timer.phase("reward"):
        clock.now = 2.0
        raise RuntimeError("grader died")
    with timer.phase("update"):  # the timer is usable afterwards: no phase left open
        clock.now = 3.0
    assert timer.s == {"reward": 2.0, "update": 1.0}


def test_reset_starts_a_new_step(clock):
    timer = StepTimer()
    with timer.phase("rollout"):
        clock.now = 1.0
    timer.reset()
    with timer.phase("rollout"):
        clock.now = 1.25
    assert timer.s == {"rollout": 0.25}
