"""extract_answer: pure string scanning (runs in the caller's process; nothing is evaluated)."""

from __future__ import annotations

import time

import pytest

from dhpo_suite.grading import extract_answer

CASES = [
    (r"so $\boxed{42}$.", "42", "plain box"),
    (r"first \boxed{1} then \boxed{2}", "2", "last box wins"),
    (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}", "nested braces"),
    (r"\boxed{\{1,2\}}", r"\{1,2\}", "escaped braces are literal"),
    (r"\fbox{7}", "7", "fbox"),
    (r"\boxed 5 and more", "5", "box without braces"),
    (r"\boxed{3} ... then \boxed{4", "3", "truncated last box: the last complete one"),
    (r"\boxed{}", None, "empty box is no answer"),
    ("The final answer is $\\frac{3}{4}$.", r"\frac{3}{4}", "answer phrase with math"),
    ("Therefore, the answer is 3.5.", "3.5", "answer phrase, trailing period"),
    ("work...\n#### 1,234", "1,234", "GSM8K ####"),
    ("Answer: 17", "17", "Answer: line"),
    ("we get 12 apples and then 15 pears", "12", "first value after the last connective (get)"),
    ("no digits here", None, "nothing"),
    ("", None, "empty"),
    ("it is 4.5e33 ergs", "4.5e33", "last number keeps e-notation"),
]


@pytest.mark.parametrize(("text", "expected", "reason"), CASES)
def test_extract(text, expected, reason):
    assert extract_answer(text) == expected, reason


def test_adversarial_text_is_linear():
    """Thousands of unclosed boxes, deep nesting and 1 MB of text extract quickly."""
    texts = ["\\boxed{" * 100_000, "\\boxed{" + "{" * 50_000 + "}" * 50_000 + "}", "x" * 1_000_000]
    start = time.perf_counter()
    results = [extract_answer(t) for t in texts]
    assert time.perf_counter() - start < 5.0
    assert results[0] is None
    assert results[1] == "{" * 50_000 + "}" * 50_000
