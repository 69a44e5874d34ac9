"""Issue 40's five patterns, each in both directions, on responses written for these tests or found in the
development set of real outputs (benchmarks/data/grading_dev, tune half, named by source and id).

Each case: (gold, response, expected verdict, expected answer_rule, why). A pattern's "wrong" twin shows
that the rule that now reads the answer cannot turn part of a wrong answer into a right one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dhpo_suite.grading import GraderPool, extract_answer
from dhpo_suite.grading.extract import RULE_SOURCE

DEV = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "grading_dev" / "tune.jsonl"

# 1. answer lines in every dress; pleasantries and special tokens after them
ANSWER_LINES = [
    ("42", "Each crate holds 6 boxes of 7, so 6 * 7 = 42.\nA: 42", True, "A: line", "GSM8K fine-tuned A: line"),
    ("41", "Each crate holds 6 boxes of 7, so 6 * 7 = 42.\nA: 42", False, "A: line", "A: line, wrong value"),
    ("15", "She pays 3 + 12 = <<3+12=15>>15 dollars.\n#### 15", True, "#### line", "GSM8K ####"),
    ("9", "Tom read 4 + 5 pages.\nTherefore, the answer (in arabic numerals) is 9.\n\nHope this helps! Let me know "
     "if anything is unclear.", True, "answer line", "parenthesised qualifier, then pleasantries"),
    ("10", "Tom read 4 + 5 pages.\nTherefore, the answer (in arabic numerals) is 9.\n\nHope this helps!", False,
     "answer line", "the pleasantry is not read as the answer; 9 is wrong"),
    ("6", "Tom read 4 + 2 pages.\nThanks for asking! The answer is 6.", True, "answer line",
     "a pleasantry before the answer on its line keeps the answer"),
    (r"\frac{3}{4}", "So the probability is 3/4. The answer is 3/4.<|im_end|>\n<|im_start|>user\nNow try 5/8.", True,
     "answer line", "a special token after the answer, then an invented turn"),
    (r"\frac{5}{8}", "So the probability is 3/4. The answer is 3/4.<|im_end|>\n<|im_start|>user\nNow try 5/8.", False,
     "answer line", "the invented turn's 5/8 is not this response's answer"),
    ("250", "He earns 10 * 25 = 250 dollars.\nTherefore, the answer is two hundred fifty dollars.", True,
     "answer line", "a value in number words"),
    ("235", '### Final Answer\n```json\n{\n  "reasoning": "d - b = 243 - 8",\n  "answer": 235\n}\n```', True,
     "json answer", "a JSON answer field after a Final Answer heading"),
    (r"\frac{\sqrt{2}\pi}{4}", '{"answer": "pi / (2 * sqrt(2))"}', True, "json answer", "math written as code"),
    (r"\frac{\sqrt{2}\pi}{4}", '{"answer": "pi / (2 * sqrt(3))"}', False, "json answer", "code math, wrong value"),
]
# 2. Markdown conclusions without a box
BOLD = [
    ("12", "Adding the two groups gives the total.\n\nThe number of marbles Ana keeps is **12**.", True, "bold",
     "a bold value in the last sentence"),
    ("21", "Adding the two groups gives the total.\n\nThe number of marbles Ana keeps is **12**.", False, "bold",
     "bold value, wrong"),
    (r"\text{(B)}", "Only the second option fits.\n\nThe correct answer is **(B) Cylinder**.", True, "answer line",
     "a bold choice with its label after 'the correct answer is'"),
    ("B", "Comparing all five options, the answer is **(B)**.", True, "answer line", "the ** are not read"),
    ("7", "**Step 1:** Let the width be w.\n**Step 2:** Then 2w + 4 = 18, so w = 7.", True, "fallback",
     "a bold label (`**Step 2:**`) is no value"),
]
# 3. cuts: only after the solution began, never leaving the echoed prompt
PROBLEM = "Two trains leave 300 km apart and meet after 2 hours. One runs at 70 km/h. How fast is the other?"
CUTS = [
    ("80", f"{PROBLEM}\nAssistant: Together they close 300 / 2 = 150 km/h, so the other runs 150 - 70 = "
     r"$\boxed{80}$ km/h.", True, "box", "an echoed prompt, then the answer after 'Assistant:'"),
    ("70", f"{PROBLEM}\nAssistant: Together they close 300 / 2 = 150 km/h, so the other runs 150 - 70 = "
     r"$\boxed{80}$ km/h.", False, "box", "the echo's 70 is never the answer"),
    ("80", "Together they close 150 km/h, so the other train runs 80 km/h.\n\nUser: And if they were 450 km apart?"
     "\nAssistant: Then it would run 155 km/h.", True, "fallback", "the invented turn is cut after the answer"),
    ("155", "Together they close 150 km/h, so the other train runs 80 km/h.\n\nUser: And if they were 450 km apart?"
     "\nAssistant: Then it would run 155 km/h.", False, "fallback", "nothing after an invented turn answers"),
]
# 4. a tuple, interval or set is taken whole or not at all
WHOLE = [
    ("(-2, 5)", "Solving both equations, the intersection point is **(-2, 5)**.", True, "bold", "a bold pair"),
    ("5", "Solving both equations, the intersection point is **(-2, 5)**.", False, "bold", "never its last element"),
    (r"[2, \infty)", "So the solution set is x ≥ 2, that is **[2, ∞)**.", True, "bold", "an interval with ∞"),
    ("2", "So the solution set is x ≥ 2, that is **[2, ∞)**.", False, "bold", "never its end"),
    ("4", "The pair that works is (1, 4).", False, "fallback", "a plain-text pair, never its element"),
    (r"\{-1, 0, 4\}", r"The roots are $\boxed{-1}$, $\boxed{0}$ and $\boxed{4}$.", True, "boxes", "boxes as a set"),
    ("4", r"The roots are $\boxed{-1}$, $\boxed{0}$ and $\boxed{4}$.", False, "boxes", "never the last box alone"),
    ("4", r"After checking, $\boxed{-1}$ is extraneous. The answer is $\boxed{4}$.", True, "box",
     "boxes apart in prose are not a list"),
    ("4", "The value of y when x = 3 is **4**.", True, "bold", "the bold value, not the x = 3 before it"),
    ("3", "The value of y when x = 3 is **4**.", False, "bold", "the condition's value is not the answer"),
]
# 5. forms: unicode inside boxes, labelled boxes, invisible characters
FORMS = [
    (r"2\sqrt{17}", r"The diagonal is $\boxed{2√17}$.", True, "box", "unicode root with a coefficient"),
    (r"2\sqrt{13}", r"The diagonal is $\boxed{2√17}$.", False, "box", "unicode root, wrong radicand"),
    (r"\frac{3\pi}{2}", r"The angle is $\boxed{3π/2}$.", True, "box", "unicode pi"),
    ("38", "The angle is \\boxed{38°}.", True, "box", "unicode degree sign"),
    (r"\frac{9}{5}", r"Hence $\boxed{k = \frac{9}{5}}$.", True, "box", "a labelled box, gold no equation"),
    (r"k = \frac{9}{5}", r"Hence $\boxed{k = \frac{9}{5}}$.", True, "box", "the same box for an equation gold"),
    (r"\begin{pmatrix} 2 \\ -1 \end{pmatrix}",
     r"$\boxed{\operatorname{proj}_{\mathbf{w}} \mathbf{v} = \begin{pmatrix} 2 \\ -1 \end{pmatrix}}$", True, "box",
     "a labelled vector with a long name"),
    ("2x", r"$\boxed{y = 2x}$", True, "box", "a function's name is presentation"),
    ("17", "The total is \\boxed{17\u200b}.", True, "box", "a zero-width space inside the box"),
    ("17", "The total is \\boxed{\u200f17\u200e}.", True, "box", "bidi marks inside the box"),
    ("18", "The total is \\boxed{17\u200b}.", False, "box", "invisible characters change no value"),
]
TABLE = ANSWER_LINES + BOLD + CUTS + WHOLE + FORMS


@pytest.fixture(scope="module")
def verdicts(pool):
    return pool.grade_many([{"response": r, "gold": g, "problem": PROBLEM if PROBLEM in r else None}
                            for g, r, *_ in TABLE])


@pytest.mark.parametrize("index", range(len(TABLE)), ids=[case[4] for case in TABLE])
def test_pattern(verdicts, index):
    gold, response, expected, rule, why = TABLE[index]
    verdict = verdicts[index]
    assert verdict.correct is expected, (why, verdict)
    assert verdict.answer_rule == rule, (why, verdict)
    assert verdict.answer_source == RULE_SOURCE[rule]


REAL = [  # (source file, id, answer_rule): real outputs in the tune half that the grader before issue 40 missed
    ("evaluations/math_baseline_results.jsonl", "60", "answer line"),  # "Answer: Tony has won a total of $300 ..."
    ("log/gsm8k_zero_shot_cot.log", "80", "answer line"),  # "... (arabic numerals) is 8. \n\nI hope this helps!"
    ("log/gsm8k_zero_shot_cot.log", "196", "answer line"),  # "... is two hundred ninety-four dollars."
    ("grade_school_math/data/example_model_solutions.jsonl", "40/6b_finetuning", "A: line"),
    ("jsonl/deepseek-v3-Instruct-solution.jsonl", "Problem_92", "json answer"),
]


def _dev_rows() -> dict:
    return {(r["source_path"], r["source_id"]): r for r in map(json.loads, DEV.open(encoding="utf-8"))}


@pytest.mark.parametrize(("path", "source_id", "rule"), REAL)
def test_real_outputs_missed_before(pool, path, source_id, rule):
    row = _dev_rows()[(path, source_id)]
    [verdict] = pool.grade_many([{"response": row["response"], "gold": row["answer"], "problem": row["problem"]}])
    assert verdict.correct is row["label"] is True, (row["note"], verdict)
    assert verdict.answer_rule == rule


def test_truncated_response_answers_only_by_box_or_answer_line():
    """The guards stay: a cut-off response gets no bold or fallback answer."""
    assert extract_answer("The point is **(-2, 5)**.", truncated=True) is None
    assert extract_answer("So the total is 80 km/h and", truncated=False) is None
    assert extract_answer("The answer is 80.", truncated=True) == "80"


def test_restating_the_problem_is_no_answer():
    with GraderPool(workers=1, timeout=20.0) as pool:
        [verdict] = pool.grade_many([{"response": "Two trains leave 300 km apart and meet after 2 hours. One runs at "
                                                  "70 km/h.", "gold": "70", "problem": PROBLEM}])
    assert verdict.correct is False and verdict.answer_rule is None
