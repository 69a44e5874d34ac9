"""Fixes found on the tune half of the second held-out set (benchmarks/data/grading_dev2, issue 40), each in
both directions: real outputs from that half (named by source file and id) and twins written for these tests.

1. a Russian answer line, "Ответ: 18" (DeathMath's prompt asks for it; the grader read no answer at all);
2. a relation chain opened by a function at a number, `t(g(16)) = ... = 3-2 = 1`, states its last value
   (before, the `t(...)` made it look like an equation to solve)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DEV2 = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "grading_dev2" / "tune.jsonl"
GPT4O = "results/details/gpt-4o/details_20250408_115501.json"
O3 = "results/details/o3-mini-2025-01-31/details_20250408_121611.json"
QWEN_NOBOX = ("one-shot-em/results/1.5B-eval-promptnobox/math500/"
              "test_qwen25-math-cot-simple_-1_seed0_t0.0_s0_e-1.jsonl")

# (gold, response, expected verdict, expected answer_rule, why)
CASES = [
    ("18", "Следовательно, \\( n = 18 \\).\n\nОтвет: 18", True, "answer line", "Russian answer line"),
    ("17", "Следовательно, \\( n = 18 \\).\n\nОтвет: 18", False, "answer line", "Russian answer line, wrong value"),
    ("-12", "Найдём a = -2d = -12.\n\nОТВЕТ: $-12$", True, "answer line", "upper case, in dollars"),
    ("13", "Итого 13 ручек, а не 12.\n\nОтвет: 12", False, "answer line", "the line, not a number before it"),
    ("1", r"The answer is $t(g(16)) = t(4) = 3-g(4) = 3-2 = 1$", True, "answer line",
     "a chain from a function at a number states its last value"),
    ("2", r"The answer is $t(g(16)) = t(4) = 3-g(4) = 3-2 = 1$", False, "answer line",
     "an intermediate value (g(4) = 2) of the chain is not its value"),
    ("5", r"The answer is $f(2) = 5$.", True, "answer line", "f at a number is a name of the value"),
    ("10", r"The answer is $2x = 10$.", False, "answer line", "an equation to solve still states no value"),
    ("5", r"The answer is $a(b+c) = 5$.", False, "answer line", "a function of unknowns is no name"),
]

# (source file, id, expected): real rows of the tune half that the grader got wrong before the fix
REAL = [
    (GPT4O, "6", True),    # "... n = 18.\n\nОтвет: 18"
    (O3, "13", True),      # "Ответ: $56" (an unclosed dollar)
    (GPT4O, "4", False),   # "Ответ: 18" for gold 24 (labelled wrong by all three; stays wrong)
    (GPT4O, "176", False),  # "Ответ: 1100" for gold 11000
    (QWEN_NOBOX, "345", True),  # "The answer is $t(g(16)) = ... = 3-2 = 1$"
]


@pytest.fixture(scope="module")
def verdicts(pool):
    return pool.grade_many([(response, gold) for gold, response, *_ in CASES])


@pytest.mark.parametrize("index", range(len(CASES)), ids=[case[4] for case in CASES])
def test_case(verdicts, index):
    gold, response, expected, rule, why = CASES[index]
    assert verdicts[index].correct is expected, (why, verdicts[index])
    assert verdicts[index].answer_rule == rule, (why, verdicts[index])


@pytest.mark.parametrize(("path", "source_id", "expected"), REAL)
def test_real_tune_rows(pool, path, source_id, expected):
    rows = {(r["source_path"], r["source_id"]): r for r in map(json.loads, DEV2.open(encoding="utf-8"))}
    row = rows[(path, source_id)]
    [verdict] = pool.grade_many([{"response": row["response"], "gold": row["answer"], "problem": row["problem"]}])
    assert row["label"] is expected, row["note"]
    assert verdict.correct is expected, (row["note"], verdict)
    assert verdict.answer_rule == "answer line"
