"""A number followed by a scale word is that number times the scale (issue 40 follow-up): "Answer: 18 thousand"
states 18000. Before, the word was dropped as a unit, so it was accepted for gold 18 and refused for 18000
(found by the multilingual work: `Antwort: 18 Millionen` too). Expected values typed by hand."""

from __future__ import annotations

import pytest

from dhpo_suite.grading import grade


@pytest.mark.parametrize(("response", "gold", "correct"), [
    ("Answer: 18 thousand", "18000", True),
    ("Answer: 18 thousand", "18", False),
    ("The answer is 18 thousand dollars.", "18,000", True),
    ("The final answer is $\\boxed{1.5 \\text{ billion}}$", "1500000000", True),
    ("The final answer is $\\boxed{1.5 \\text{ billion}}$", "1.5", False),
    ("So the total is \\boxed{\\$2 million}.", "2000000", True),
    ("The answer is 0.25 million", "250000", True),
    ("The answer is 18 hundred", "1800", True),
    ("\\boxed{18000}", "18 thousand", True),  # a gold written with its scale word
    ("Answer: 18 apples", "18", True),  # other words after a number are still a unit
    ("Antwort: 18 Millionen", "18000000", True),
    ("Antwort: 18 Millionen", "18", False),
    ("Respuesta: 2 millones de dólares", "2000000", True),
])
def test_scale_words_multiply(response, gold, correct):
    assert grade(response, gold).correct is correct
