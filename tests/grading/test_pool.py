"""GraderPool: order, progress, timeouts that kill and replace a worker, dead workers, hostile input."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from dhpo_suite.grading import GraderPool, Verdict, grade

TOWER = r"\boxed{10^{10^{10^{10}}}}"  # sympy tries to evaluate it: a real hang, not a simulated one


def test_order_and_progress(pool):
    items = [(f"\\boxed{{{i}}}", str(i if i % 3 else i + 1), "gsm8k") for i in range(30)]
    calls = []
    verdicts = pool.grade_many(items, progress=lambda done, total: calls.append((done, total)))
    assert [v.extracted for v in verdicts] == [str(i) for i in range(30)]
    assert [v.correct for v in verdicts] == [i % 3 != 0 for i in range(30)]
    assert calls == [(k, 30) for k in range(1, 31)]


def test_dict_items_and_answer_alt(pool):
    items = [
        {"response": r"\boxed{4.5\times 10^{33}}", "answer": "4.5e33", "answer_alt": ["4.5 \\times 10^{33}"]},
        {"response": r"\boxed{7}", "gold": ["6", "7"], "bench": "amc23"},
    ]
    first, second = pool.grade_many(items)
    assert first.correct and second.correct
    assert "gold '7'" in second.reason


def test_bad_items_name_the_field(pool):
    with pytest.raises(TypeError, match="item 1.response"):
        pool.grade_many([("\\boxed{1}", "1"), (None, "1")])
    with pytest.raises(TypeError, match="item 0.gold"):
        pool.grade_many([("\\boxed{1}", [])])
    with pytest.raises(TypeError, match="item 0: needs a 'gold' or 'answer'"):
        pool.grade_many([{"response": "x"}])


def test_timeout_kills_and_replaces_the_worker():
    with GraderPool(workers=1, timeout=1.0) as small:
        before = small.runtime_info()[0]["pid"]
        start = time.monotonic()
        verdicts = small.grade_many([("\\boxed{2}", "2"), (TOWER, "1"), ("\\boxed{3}", "3")])
        elapsed = time.monotonic() - start
        assert [v.status for v in verdicts] == ["ok", "timeout", "ok"]
        assert verdicts[1].correct is False and "killed and replaced" in verdicts[1].reason
        assert verdicts[1].extracted == "10^{10^{10^{10}}}"
        assert verdicts[2].correct
        assert elapsed < 15.0  # bounded by the timeout (+ replacement), not by sympy
        after = small.runtime_info()[0]["pid"]
        assert after != before
        with pytest.raises(ProcessLookupError):
            os.kill(before, 0)  # the stuck worker is really gone
        assert small.stats["timeouts"] == 1 and small.stats["restarts"] == 1


def test_worker_that_dies_is_replaced():
    with GraderPool(workers=1, timeout=30.0) as small:
        pid = small.runtime_info()[0]["pid"]
        threading.Timer(1.0, os.kill, (pid, signal.SIGKILL)).start()
        dead, fine = small.grade_many([(TOWER, "1"), ("\\boxed{5}", "5")])
        assert dead.status == "error" and "died" in dead.reason
        assert fine.correct
        assert small.stats["restarts"] == 1


def test_hostile_responses_do_not_hang_crash_or_execute(tmp_path):
    marker = tmp_path / "pwned"
    injections = [
        f"\\boxed{{__import__('os').system('touch {marker}')}}",
        f"The answer is __import__('os').system('touch {marker}')",
        f"\\boxed{{\\text{{{{}}}}}} ; exec(\"open('{marker}','w')\")",
        f"{{__import__('os').system('touch {marker}')}}",
    ]
    hostile = [
        TOWER,
        "\\boxed{" + "{" * 5000 + "1" + "}" * 5000 + "}",
        "\\boxed{" * 20000,
        "lorem ipsum " * 90_000 + "\\boxed{7}",  # ~1 MB
        "\\boxed{" + "x+" * 200_000 + "1}",
        "\\boxed{" + "\\frac{1}{" * 300 + "2" + "}" * 300 + "}",
    ] + injections
    with GraderPool(workers=2, timeout=2.0) as small:
        start = time.monotonic()
        verdicts = small.grade_many([(text, ["7", "1"]) for text in hostile])
        assert time.monotonic() - start < 60.0
        assert all(isinstance(v, Verdict) and v.status in ("ok", "no_answer", "timeout", "error")
                   for v in verdicts)
        assert verdicts[0].status == "timeout"
        assert verdicts[3].correct  # the 1 MB response still has its answer
        assert not any(v.correct for i, v in enumerate(verdicts) if i != 3)
        assert small.grade("\\boxed{2}", "2").correct  # the pool still works
    assert not marker.exists()


def test_module_level_grade():
    verdict = grade("so the answer is $\\boxed{0.5}$", "\\frac{1}{2}")
    assert verdict == Verdict(True, "0.5", "ok", verdict.reason, "boxed", "box")
    assert grade("nothing", "1").status == "no_answer"


@pytest.mark.parametrize(("response", "gold", "expected"), [
    (r"The two values are \boxed{69} and \boxed{84}.", "69,84", True),
    (r"So $x = \boxed{84}$ or $x = \boxed{69}$.", "69,84", True),
    (r"First \boxed{69}. " + "More work. " * 60 + r"Finally \boxed{84}.", "69,84", False),
    (r"\boxed{69} and \boxed{84}", "84", False),  # issue 40: boxes written as one list are taken whole
    (r"\boxed{69} and \boxed{85}", "69,84", False),
])
def test_multiple_answers_in_separate_boxes(pool, response, gold, expected):
    assert pool.grade(response, gold, "olympiadbench").correct is expected


def test_interrupted_batch_leaves_no_stale_results(pool):
    def stop(done, total):
        if done == 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        pool.grade_many([(f"\\boxed{{{i}}}", str(i)) for i in range(20)], progress=stop)
    verdicts = pool.grade_many([(f"\\boxed{{{i}}}", "100") for i in range(100, 104)])
    assert [v.extracted for v in verdicts] == ["100", "101", "102", "103"]
    assert [v.correct for v in verdicts] == [True, False, False, False]


def test_the_clock_covers_a_50_mb_response():
    """Issue 29: a 50 MB response with --timeout 5 ends within 6 s (it took 25.5 s when the parent scanned it
    outside the worker's clock); it is graded on its last 1,000,000 characters, and the reason says so."""
    big = "Let me think about this step by step. " * 1_350_000 + r"The answer is $\boxed{7}$."
    assert len(big) > 50_000_000
    with GraderPool(workers=1, timeout=5.0) as small:
        start = time.monotonic()
        verdict = small.grade(big, "7")
        assert time.monotonic() - start < 6.0
    assert verdict.correct and "only its last 1,000,000 were graded" in verdict.reason
