"""Number literals and the numeric tolerance policy (exact rational arithmetic, no floats, no eval).

A literal is an integer (`025`), a decimal (`1.60`), computer e-notation (`4.5e33`), LaTeX scientific
notation (`4.5\\times10^{33}`, `4.5\\cdot 10^{33}`), a power of ten (`10^{-3}`) or an integer fraction
(`\\frac{3}{4}`, `-3/4`). Integers and fractions are exact; decimals and scientific forms are
*rounded* values: they carry the unit of their last written digit (ulp) and their significant digits.

Policy (false positives are worse than false negatives):
* equal values always match (`025` = `25`, `0.5` = `\\frac12`, `4.5e33` = `4.5\\times10^{33}`);
* an exact gold (integer or fraction) matches only an equal value, except that a decimal prediction
  for a non-integer gold is accepted when it has at least 4 significant digits and is the gold
  rounded or truncated at its own last digit (`0.6667` or `0.6666` for 2/3; not `0.67`, `0.6668`);
* a rounded gold with >= 2 significant digits matches a prediction that rounds to it, i.e.
  |pred - gold| <= ulp(gold)/2 (`1.6` accepts `1.62` and `8/5`, rejects `1.66` and `1.5`);
* a rounded gold with 1 significant digit (`0.2`, `1e11`) allows only relative error 1e-4
  (SimpleRL's rel_tol): half a unit there is +-25 %, far too loose.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Num", "numbers_match", "parse_number"]

MAX_EXPONENT = 400  # larger literals are left to math-verify (inside a timed worker)
REL_TOL_ONE_DIGIT = Fraction(1, 10_000)
MIN_SIG_FOR_DECIMAL_OF_EXACT = 4

_DEC = r"([-+]?)(\d*)(?:\.(\d*))?"
_SCI_RE = re.compile(
    rf"^{_DEC}(?:[eE]([-+]?\d+)|\s*(?:\\times|\\cdot|\*|x)\s*10\s*\^\s*\{{?\s*([-+]?\d+)\s*\}}?)?$"
)
_POW10_RE = re.compile(r"^([-+]?)10\s*\^\s*\{?\s*([-+]?\d+)\s*\}?$")
_FRAC_RE = re.compile(
    r"^([-+]?)\s*(?:\\frac\s*\{\s*([-+]?\d+)\s*\}\s*\{\s*(\d+)\s*\}|(\d+)\s*/\s*(\d+))$"
)


@dataclass(frozen=True)
class Num:
    """A number literal: exact `value`; `ulp` is the unit of the last written digit (None when exact)."""

    value: Fraction
    ulp: Fraction | None = None
    sig: int = 0
    text: str = ""

    @property
    def exact(self) -> bool:
        return self.ulp is None


def parse_number(s: str) -> Num | None:
    """The literal `s` denotes, or None when `s` is not a plain number literal."""
    s = s.strip()
    if not s or len(s) > 200:
        return None
    return _parse_decimal(s) or _parse_pow10(s) or _parse_fraction(s)


def numbers_match(gold: Num, pred: Num) -> tuple[bool, str]:
    """(match, reason) under the policy in the module docstring."""
    g, p = gold.value, pred.value
    if g == p:
        return True, f"numbers equal: {pred.text} = {gold.text}"
    diff = abs(p - g)
    if gold.exact:
        if (
            g.denominator != 1
            and not pred.exact
            and pred.sig >= MIN_SIG_FOR_DECIMAL_OF_EXACT
            and (diff <= pred.ulp / 2 or (abs(p) <= abs(g) and diff < pred.ulp))
        ):
            return True, f"{pred.text} is {gold.text} to {pred.sig} significant digits"
        return False, f"numbers differ: {pred.text} != {gold.text}"
    if gold.sig >= 2 and diff <= gold.ulp / 2:
        return True, f"{pred.text} rounds to the rounded gold {gold.text} (+-{float(gold.ulp / 2):.3g})"
    if gold.sig == 1 and diff <= REL_TOL_ONE_DIGIT * abs(g):
        return True, f"{pred.text} is within relative 1e-4 of gold {gold.text}"
    return False, f"numbers differ: {pred.text} is not {gold.text} within its rounding"


def _parse_decimal(s: str) -> Num | None:
    m = _SCI_RE.match(s)
    if not m:
        return None
    sign, whole, frac, e1, e2 = m.groups()
    if not whole and not frac:
        return None
    exp_text = e1 if e1 is not None else e2
    exponent = int(exp_text) if exp_text is not None else 0
    if abs(exponent) > MAX_EXPONENT:
        return None
    frac = frac or ""
    digits = (whole + frac).lstrip("0") or "0"
    mantissa = Fraction(int(whole or "0") * 10 ** len(frac) + int(frac or "0"), 10 ** len(frac))
    value = mantissa * Fraction(10) ** exponent * (-1 if sign == "-" else 1)
    rounded = "." in s or exp_text is not None
    ulp = Fraction(10) ** (exponent - len(frac)) if rounded else None
    return Num(value, ulp, len(digits), s)


def _parse_pow10(s: str) -> Num | None:
    m = _POW10_RE.match(s)
    if not m or abs(int(m.group(2))) > MAX_EXPONENT:
        return None
    return Num(Fraction(10) ** int(m.group(2)) * (-1 if m.group(1) == "-" else 1), None, 1, s)


def _parse_fraction(s: str) -> Num | None:
    m = _FRAC_RE.match(s)
    if not m:
        return None
    sign, num_a, den_a, num_b, den_b = m.groups()
    num, den = int(num_a or num_b), int(den_a or den_b)
    if den == 0 or len(str(num)) > MAX_EXPONENT or len(str(den)) > MAX_EXPONENT:
        return None
    return Num(Fraction(num, den) * (-1 if sign == "-" else 1), None, 0, s)
