"""The answer-type tables (tables.py) through the real grader pool, beside plain math-verify.

Per case: the expected verdict. Per table: zero false positives, and no more errors (false negatives +
false positives) than plain math-verify 0.9.0 on the same table (run in a child interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .tables import TABLES

CASES = [(name, *row) for name, table in TABLES.items() for row in table]


@pytest.fixture(scope="module")
def verdicts(pool):
    return pool.grade_many([(response, gold) for _, gold, response, _, _ in CASES])


@pytest.fixture(scope="module")
def plain_math_verify():
    script = Path(__file__).with_name("plain_math_verify.py")
    pairs = [[gold, response] for _, gold, response, _, _ in CASES]
    out = subprocess.run([sys.executable, str(script)], input=json.dumps(pairs), capture_output=True,
                         text=True, timeout=300, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_case(verdicts, index):
    table, gold, response, expected, reason = CASES[index]
    verdict = verdicts[index]
    assert verdict.status in ("ok", "no_answer"), (reason, verdict)
    assert verdict.correct is expected, (table, reason, gold, response, verdict)
    assert verdict.reason


@pytest.mark.parametrize("table", list(TABLES))
def test_at_least_as_accurate_as_math_verify(verdicts, plain_math_verify, table):
    rows = [i for i, case in enumerate(CASES) if case[0] == table]
    expected = [CASES[i][3] for i in rows]

    def errors(correct):
        return sum(c != e for c, e in zip(correct, expected)), sum(c and not e for c, e in zip(correct, expected))

    ours, theirs = errors([verdicts[i].correct for i in rows]), errors([plain_math_verify[i] for i in rows])
    assert ours[1] == 0, f"{table}: {ours[1]} false positives"
    assert ours[0] <= theirs[0], f"{table}: {ours[0]} errors, plain math-verify {theirs[0]}"
    assert len(set(expected)) == 2, f"{table} must hold accepted and refused cases"


def test_no_marker_answers_are_labelled_fallback(verdicts):
    sources = {CASES[i][2]: v.answer_source for i, v in enumerate(verdicts)}
    assert sources["so the total is 42."] == "fallback"
    assert sources[r"Final Answer: The largest $n$ is 34."] == "marker"
    assert sources[r"$\boxed{x=11}$"] == "boxed"
    assert sources["AZYUK2A"] is None
