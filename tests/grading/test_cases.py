"""Grader case tables: (gold, prediction, expected, reason). Zero false positives is the priority."""

from __future__ import annotations

import pytest

# Equivalent rewrites: each must be graded correct.
EQUIVALENT = [
    ("0.5", r"\frac{1}{2}", True, "fraction equals decimal"),
    (r"\frac{1}{2}", "0.5", True, "decimal equals fraction"),
    (r"\frac{11}{2}", r"\dfrac{11}{2}", True, "dfrac is frac"),
    (r"\frac{11}{2}", "5.5", True, "decimal of a fraction"),
    ("4.5e33", r"4.5 \times 10^{33}", True, "minerva e-notation vs LaTeX scientific"),
    ("4.5e33", "4.5e33", True, "same e-notation"),
    ("1.24e-8", r"1.24\cdot 10^{-8}", True, "cdot scientific"),
    ("3e8", "300000000", True, "e-notation vs integer"),
    ("25", "025", True, "leading zeros (AIME answer_raw '025')"),
    ("58,500", "58500", True, "thousands comma in gold"),
    ("14000", "14,000", True, "thousands comma in prediction"),
    ("2125", r"2{,}125", True, "LaTeX thousands separator"),
    ("76^\\circ", "76", True, "degrees dropped"),
    ("76", r"76^{\circ}", True, "degrees in prediction"),
    ("30", "30°", True, "unicode degree sign"),
    ("18", r"\$18", True, "dollar sign"),
    ("18", r"\$18.00", True, "dollars and cents"),
    ("5.4 \\text{ cents}", "5.4", True, "unit in gold"),
    ("864 \\mbox{ inches}^2", "864", True, "squared unit in gold"),
    ("45", "45 minutes", True, "unit word in prediction"),
    (r"\frac{600}{7}", r"\frac{600}{7} \text{ km/h}", True, "unit text in prediction"),
    ("8 \\%", "8", True, "percent sign"),
    ("8 \\%", "0.08", True, "percent as a fraction"),
    ("198", r"198\%", True, "percent in prediction"),
    ("42", "42.", True, "trailing period"),
    ("3", "x = 3", True, "variable assignment"),
    ("k=2 n-1", "2n-1", True, "gold equation, prediction rhs"),
    (r"2 \sqrt{10}", r"\sqrt{40}", True, "symbolic equivalence"),
    (r"2 \sqrt{10}", "6.3246", True, "decimal of an irrational to 5 digits"),
    ("(2,4)", "(2, 4)", True, "tuple spacing"),
    ("(4, \\log _{10} 2)", r"(4,\log_{10}2)", True, "tuple with log"),
    (r"(-\infty,-5)", r"(-\infty, -5)", True, "interval"),
    ("[\\frac{1}{2}, 8]", "[0.5,8]", True, "closed interval with decimal end"),
    ("(2,12) \\cup (12,102)", "(2,12)\\cup(12,102)", True, "union of intervals"),
    ("1,3,5", "5, 3, 1", True, "multiple answers, any order"),
    ("2500,7500", "7500, 2500", True, "multiple answers are not thousands"),
    (r"\frac{1}{6} \pi, \frac{5}{6} \pi", r"\frac{5\pi}{6}, \frac{\pi}{6}", True, "multiple symbolic"),
    ("1.6", "1.62", True, "rounded gold: 1.62 rounds to 1.6"),
    ("1.6", r"\frac{8}{5}", True, "rounded gold vs exact fraction"),
    ("0.554", "0.5543", True, "rounded gold, 3 digits"),
    ("4.46e19", r"4.462\times10^{19}", True, "rounded scientific gold"),
    (r"\text{Evelyn}", "Evelyn", True, "word answer"),
    (r"\text{(C)}", "C", True, "multiple-choice letter"),
    (r"\text{east}", r"\text{East}", True, "word answer ignores case"),
    (r"\begin{pmatrix} -1 & 0 \\ 0 & -1 \end{pmatrix}",
     r"\begin{pmatrix}-1&0\\0&-1\end{pmatrix}", True, "matrix"),
    ("6+9i", "9i+6", True, "complex number"),
    (r"p(x)=\frac{(x-1)(x-2)}{6}", r"\frac{x^2-3x+2}{6}", True, "polynomial, gold with f(x)="),
]

# Non-equivalent near misses: each must be graded wrong.
NEAR_MISS = [
    ("25", "26", False, "off by one"),
    ("25", "25.001", False, "integer gold is exact"),
    ("100000000", "100000001", False, "large integers differ"),
    ("0.0000012", "0.0000013", False, "tiny numbers (math-verify rounds to 6 places)"),
    ("1.24e-8", "5e-9", False, "tiny scientific numbers"),
    ("4.5e33", "4.5e34", False, "exponent differs"),
    ("4.5e33", r"4.5 e 33", False, "spaced e is not scientific notation"),
    ("1.6", "1.66", False, "does not round to the gold"),
    ("1.6", "1.5", False, "less precise and different"),
    ("0.2", "0.24", False, "one significant digit: no half-unit tolerance"),
    ("1e11", "1.4e11", False, "one significant digit in e-notation"),
    (r"\frac{2}{3}", "0.67", False, "two digits of 2/3 are not enough"),
    (r"\frac{2}{3}", "0.6668", False, "wrong fourth digit"),
    (r"2 \sqrt{10}", "6.32", False, "three digits of an irrational"),
    ("(2,4)", "(4,2)", False, "ordered pair reversed"),
    ("(0,4]", "(0,4)", False, "interval end open vs closed"),
    ("(0,4]", "[0,4]", False, "interval start closed"),
    ("1,3,5", "1,3", False, "missing one of multiple answers"),
    ("1,3", "1,3,5", False, "extra answer"),
    ("2500,7500", "2500", False, "only one of two answers"),
    (r"\text{Evelyn}", "Evlyne", False, "anagram (a product of symbols would commute)"),
    (r"\text{(C)}", "D", False, "wrong letter"),
    ("8 \\%", "0.8", False, "percent read as fraction is 0.08"),
    (r"\frac{1}{2}", r"\frac{1}{3}", False, "different fractions"),
    (r"2 \sqrt{10}", r"\sqrt{10}", False, "missing factor"),
    ("x^2+1", "x^2-1", False, "sign"),
    ("k=2 n-1", "2n+1", False, "equation rhs differs"),
    ("76^\\circ", "77", False, "degrees differ"),
    ("18", r"\$19", False, "dollars differ"),
    ("58,500", "58,501", False, "thousands differ"),
    ("3", "x = 4", False, "assignment to another value"),
    (r"10^{100},10^{1 / 100}", r"10^{100}", False, "one of two answers"),
    ("6+9i", "6-9i", False, "conjugate"),
]


@pytest.fixture(scope="module")
def verdicts(pool):
    cases = EQUIVALENT + NEAR_MISS
    results = pool.grade_many([(f"So the answer is $\\boxed{{{p}}}$.", g) for g, p, _, _ in cases])
    return dict(zip(((g, p) for g, p, _, _ in cases), results))


@pytest.mark.parametrize(("gold", "prediction", "expected", "reason"), EQUIVALENT + NEAR_MISS)
def test_case_table(verdicts, gold, prediction, expected, reason):
    verdict = verdicts[(gold, prediction)]
    assert verdict.status == "ok", (reason, verdict)
    assert verdict.correct is expected, (reason, verdict)
    assert verdict.reason
