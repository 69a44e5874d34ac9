"""Equations and quantities with units compared by their structure (string rules; parsing stays in check.py).

* Units: both sides are stripped of units before comparison (`normalize`), so `1.6 \\text{ cm}` and
  `1.6 \\text{ m}` would be "identical". When both the gold and the answer name a known unit and the
  units differ, the answer is refused (`unit_conflict`): a value in another unit is another quantity.
  Spellings of one unit are one unit (`cm`, `centimeters`, `\\mathrm{~cm}`); unknown words ("apples")
  are never compared, so they cannot refuse a right answer.
* Equations whose gold math-verify cannot parse faithfully (`\\frac{d x}{d t}=k x-a`: the `d` is lost;
  `I(t)=I_0 e^{-t/RC}`: `R`, `C` lower-cased) are compared side by side (`equation_parts`): the same
  relation (or its mirror with the sides swapped), each side equal as text or, when both sides parse
  with the same variable letters (case kept), equivalent under math-verify.
"""

from __future__ import annotations

import re

from dhpo_suite.grading.normalize import split_top

__all__ = ["equation_parts", "mirrored", "term_key", "unit_conflict", "unit_of"]

_UNITS = {
    "mm": ("mm", "millimeter", "millimetre"), "cm": ("cm", "centimeter", "centimetre"),
    "m": ("m", "meter", "metre"), "km": ("km", "kilometer", "kilometre"), "in": ("in", "inch", "inche"),
    "ft": ("ft", "foot", "feet"), "yd": ("yd", "yard"), "mi": ("mi", "mile"),
    "s": ("s", "sec", "second"), "min": ("min", "minute"), "h": ("h", "hr", "hour"), "day": ("day",),
    "week": ("week",), "year": ("yr", "year"), "g": ("g", "gram"), "kg": ("kg", "kilogram"),
    "mg": ("mg", "milligram"), "lb": ("lb", "pound"), "oz": ("oz", "ounce"), "l": ("l", "liter", "litre"),
    "ml": ("ml", "milliliter", "millilitre"), "mph": ("mph",), "km/h": ("km/h", "kmh", "kph"),
    "m/s": ("m/s",), "nm": ("nm", "nanometer", "nanometre"), "j": ("j", "joule"), "ev": ("ev",),
    "k": ("k", "kelvin"), "w": ("w", "watt"), "hz": ("hz", "hertz"), "n": ("n", "newton"),
    "dollar": ("dollar",), "cent": ("cent",),
}
_CANONICAL = {spelling: unit for unit, spellings in _UNITS.items() for spelling in spellings}
_TEXT_UNIT_RE = re.compile(
    r"(?:\\mu\s*)?\\(?:text|mbox|mathrm|textrm|rm)\s*\{\s*~?\s*([A-Za-z/ ]+?)\s*\}\s*(\^\s*\{?\s*-?\d\s*\}?)?\s*$"
)
_WORD_UNIT_RE = re.compile(r"(?<=[\d}\s])\s*(?:square\s+|cubic\s+)?([A-Za-z/]+)\s*(\^\s*\{?\s*-?\d\s*\}?)?\s*\.?$")
_RELATIONS = r"\\leq?|\\geq?|\\neq|\\lt|\\gt|(?<![<>!\\])=|<|>"
_MIRROR = {"<": ">", ">": "<", "\\lt": "\\gt", "\\gt": "\\lt", "\\le": "\\ge", "\\ge": "\\le",
           "\\leq": "\\geq", "\\geq": "\\leq", "=": "=", "\\neq": "\\neq"}


def unit_of(raw: str) -> str | None:
    """The known unit a quantity is written in (`1.6 \\mathrm{~cm}` → cm, `20 centimeters` → cm), or None."""
    text = raw.strip().strip("$").strip()
    if not re.search(r"\d", text):
        return None
    m = _TEXT_UNIT_RE.search(text) or _WORD_UNIT_RE.search(text)
    if not m:
        return None
    word = m.group(1).strip()
    mu = text[m.start():].lstrip().startswith("\\mu")
    key = word if len(word) <= 2 else word.lower()
    key = key[:-1] if len(key) > 3 and key.endswith("s") and key != "ounces" else key
    unit = _CANONICAL.get("ounce" if key == "ounces" else key)
    if unit is None:
        return None
    power = re.sub(r"[\s{}^]", "", m.group(2) or "")
    square = "square" in text[m.start():].lower()
    return ("\u03bc" if mu else "") + unit + (f"^{power}" if power else "") + ("^2" if square else "")


def unit_conflict(gold_raw: str, pred_raw: str) -> str | None:
    """A reason when the gold and the answer name different known units, else None."""
    gold, pred = unit_of(gold_raw), unit_of(pred_raw)
    return f"units differ: the answer is in {pred}, the gold in {gold}" if gold and pred and gold != pred else None


def equation_parts(text: str) -> tuple[str, str, str] | None:
    """(left, relation, right) of an equation or inequality with exactly one top-level relation."""
    parts, seps = split_top(text, _RELATIONS)
    if len(seps) != 1 or not parts[0] or not parts[1]:
        return None
    return parts[0], seps[0].strip(), parts[1]


def mirrored(relation: str) -> str:
    """The relation read with its sides swapped (`<` → `>`, `=` → `=`)."""
    return _MIRROR.get(relation, relation)


def term_key(side: str) -> tuple[str, ...]:
    """A side as the sorted signed terms of its top-level sum, spaces and one-character braces dropped:
    `m \\frac{d v}{d t}+b v` and `bv + m\\frac{dv}{dt}` have one key; `m\\frac{dv}{dt} - bv` another."""
    text = re.sub(r"(?<!\\[A-Za-z])\s+|(?<=\\[A-Za-z])\s+(?![A-Za-z])", "", side)
    text = re.sub(r"([_^])\{(\w)\}", r"\1\2", text)
    terms, depth, current = [], 0, ""
    for ch in text:
        depth += (ch in "{([") - (ch in "})]")
        if ch in "+-" and depth == 0 and current:
            terms.append(current)
            current = ""
        current += ch
    terms.append(current)
    return tuple(sorted(t if t[:1] in "+-" else "+" + t for t in terms if t))
