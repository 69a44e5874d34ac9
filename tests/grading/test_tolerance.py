"""Number literals and the tolerance policy (pure functions, no workers)."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dhpo_suite.grading.normalize import normalize
from dhpo_suite.grading.tolerance import Num, numbers_match, parse_number


@pytest.mark.parametrize(("text", "value", "exact"), [
    ("025", Fraction(25), True),
    ("-3/4", Fraction(-3, 4), True),
    (r"\frac{7}{2}", Fraction(7, 2), True),
    ("1.60", Fraction(8, 5), False),
    ("4.5e33", Fraction(45 * 10**32), False),
    (r"4.5\times10^{33}", Fraction(45 * 10**32), False),
    (r"1.24 \cdot 10^{-8}", Fraction(124, 10**10), False),
    ("10^{-3}", Fraction(1, 1000), True),
    (".35625", Fraction(35625, 100000), False),
])
def test_parse_number(text, value, exact):
    num = parse_number(text)
    assert num is not None and num.value == value and num.exact is exact


@pytest.mark.parametrize("text", ["x+1", "1e99999", r"\sqrt{2}", "1,2", "", "e5", "1/0"])
def test_not_a_literal(text):
    assert parse_number(text) is None


@pytest.mark.parametrize(("gold", "pred", "expected", "reason"), [
    ("1.6", "1.64", True, "rounds to the gold"),
    ("1.6", "1.65", True, "boundary: half a unit is inclusive"),
    ("1.6", "1.651", False, "just outside half a unit"),
    ("1.70e4", "17040", True, "3 significant digits"),
    ("4.4677", "4.468", False, "less precise than the gold"),
    ("0.2", "0.20001", True, "one digit: relative 1e-4"),
    ("0.2", "0.21", False, "one digit: no half-unit tolerance"),
    ("25", "25.0", True, "equal value"),
    ("25", "25.0001", False, "exact integer gold"),
    (r"\frac{1}{3}", "0.3333", True, "4 significant digits of an exact fraction"),
    (r"\frac{1}{3}", "0.333", False, "3 digits are too few"),
    (r"\frac{1}{3}", "0.3334", False, "not a rounding or truncation"),
])
def test_policy(gold, pred, expected, reason):
    match, why = numbers_match(parse_number(gold), parse_number(pred))
    assert match is expected, (reason, why)
    assert why


@pytest.mark.parametrize(("raw", "normal"), [
    (r"$\dfrac{1}{2}$", r"\frac{1}{2}"),
    (r"\frac12", r"\frac{1}{2}"),
    (r"58{,}500", "58500"),
    ("1 000 000", "1000000"),
    (r"90^{\circ}", "90"),
    (r"\$1,000.", "1000"),
    (r"12\%", "12"),
    (r"\text{(C)}", "(C)"),
    (r"5\text{ cm}^2", "5"),
    ("3 m", "3"),
    (r"\left( 1, 2 \right)", "(1, 2)"),
    (r"\approx 1.62", "1.62"),
    ("4.5e33 + x", r"4.5\times10^{33} + x"),
    (r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}", r"\begin{pmatrix} 1 \\ 2 \end{pmatrix}"),
])
def test_normalize(raw, normal):
    assert normalize(raw) == normal


@given(st.integers(-10**12, 10**12), st.integers(-10**12, 10**12))
def test_integers_match_only_when_equal(a, b):
    assert numbers_match(parse_number(str(a)), parse_number(str(b)))[0] is (a == b)


@given(st.integers(0, 10**15))
def test_thousands_separators_and_leading_zeros(n):
    assert parse_number(normalize(f"{n:,}")).value == n
    assert parse_number(normalize(f"0{n}")).value == n


@given(st.integers(-10**6, 10**6), st.integers(1, 10**4).map(lambda k: 2 ** (k % 7) * 5 ** (k % 5)))
def test_terminating_decimal_equals_its_fraction(p, q):
    decimal = format(Decimal(p) / Decimal(q), "f")
    match, _ = numbers_match(parse_number(rf"\frac{{{p}}}{{{q}}}"), parse_number(decimal))
    assert match


@given(st.integers(1, 999), st.integers(-30, 30), st.integers(1, 9))
def test_rounded_gold_rejects_a_change_beyond_half_a_unit(mantissa, exponent, bump):
    gold = parse_number(f"{mantissa / 100:.2f}e{exponent}")  # 3 significant digits
    pred = Num(gold.value + gold.ulp * (Fraction(1, 2) + Fraction(bump, 10)), None, 0, "p")
    assert not numbers_match(gold, pred)[0]
