"""Equivalent rewrites and near misses of gold answers, for the grader's tests and benchmark.

`equivalent_rewrites(gold)` gives other ways a correct model writes the same answer (numeric forms,
thousands separators, scientific notation, spacing, list order); `near_miss(gold)` gives a wrong
answer that looks almost the same (last digit changed, `+1` appended, pair reversed, interval end
flipped). `responses(answer)` wraps an answer in the sentences models produce.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

from dhpo_suite.grading.normalize import normalize, split_top_level
from dhpo_suite.grading.tolerance import parse_number

__all__ = ["equivalent_rewrites", "near_miss", "responses"]


def responses(answer: str) -> list[str]:
    """A correct response written three ways: boxed in a sentence, boxed in display math, a phrase."""
    return [
        f"Putting everything together, the final answer is $\\boxed{{{answer}}}$.",
        f"We check the cases above.\n\n\\[\n\\boxed{{{answer}}}\n\\]",
        f"After simplifying, the answer is ${answer}$.",
    ]


def equivalent_rewrites(gold: str) -> list[str]:
    """Forms of `gold` a correct answer may take (always including `gold` itself)."""
    forms = [gold]
    num = parse_number(normalize(gold))
    if num is not None:
        forms += _number_forms(gold, num.value)
    elif len(split_top_level(gold)) > 1 and not gold.lstrip().startswith(("(", "[")):
        forms.append(", ".join(reversed(split_top_level(gold))))
    elif re.fullmatch(r"\(.*\)", gold.strip()):
        forms.append(r"\left" + gold.strip()[:1] + gold.strip()[1:-1] + r"\right" + gold.strip()[-1])
    else:
        # drop spaces, except between letters (`\\omega i` is not `\\omegai`, `i t` is not `it`)
        squeezed = re.sub(r"(?<![A-Za-z])\s+|\s+(?![A-Za-z])", "", gold)
        forms.append(squeezed if squeezed != gold else gold.replace("\\frac", "\\dfrac"))
    return list(dict.fromkeys(forms))


def near_miss(gold: str) -> str:
    """A wrong answer that looks like `gold`."""
    num = parse_number(normalize(gold))
    if num is not None:
        return _plain(num.value + (1 if num.exact else 3 * num.ulp))
    stripped = gold.strip()
    match = re.fullmatch(r"([(\[])(.*)([)\]])", stripped)
    if match and "\\cup" not in stripped and _balanced(match.group(2)):
        items = split_top_level(match.group(2))
        if len(items) == 2 and ("[" in stripped or "]" in stripped or "infty" in stripped):
            left, right = "[" if match.group(1) == "(" else "(", "]" if match.group(3) == ")" else ")"
            return left + match.group(2) + right  # interval: flip both ends
        if len(items) >= 2 and items[0] != items[-1]:
            return match.group(1) + ", ".join(items[::-1]) + match.group(3)  # tuple: reversed
    return f"{gold}+1"


def _number_forms(gold: str, value: Fraction) -> list[str]:
    forms = []
    if value.denominator == 1:
        n = int(value)
        forms.append(str(n))
        if abs(n) >= 1000:
            forms.append(f"{n:,}")
        if 0 <= n < 100:
            forms.append(f"{n:03d}")  # AIME style
        forms.append(f"{n}.0")
    else:
        forms.append(_frac(value))
        if _terminates(value.denominator):
            forms.append(_plain(value))
    if re.fullmatch(r"[-+]?[\d.]+[eE][-+]?\d+", gold.strip()):
        mantissa, exponent = re.split(r"[eE]", gold.strip())
        forms.append(f"{mantissa} \\times 10^{{{int(exponent)}}}")
    return forms


def _plain(value: Fraction) -> str:
    if value.denominator == 1:
        return str(int(value))
    if _terminates(value.denominator):
        return format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return _frac(value)


def _frac(value: Fraction) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}\\frac{{{abs(value.numerator)}}}{{{value.denominator}}}"


def _terminates(denominator: int) -> bool:
    for p in (2, 5):
        while denominator % p == 0:
            denominator //= p
    return denominator == 1


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += (ch in "([{") - (ch in ")]}")
        if depth < 0:
            return False
    return depth == 0
