"""Answer shapes that need their own reading before comparison (string rules; nothing is evaluated).

* clock times: `4:30 \\text{ p.m.}`, `\\text{4:30 p.m.}`, `16:30`, `12{:}00`, `12:00 noon`, `9 a.m.` →
  minutes after midnight (math-verify reads `12:00` as a ratio and raises on the division by zero);
* multiple-choice labels: `\\textbf{(B) } 27` answers a value gold with 27 and a letter gold with B;
* stated values: `x = 5+5+1 = 11` states 11, `x \\approx 11` states 11 and `\\frac{70}{9} \\approx 7.78`
  states the exact 70/9 (the approximation is used only when nothing exact precedes it).
"""

from __future__ import annotations

import re

from dhpo_suite.grading.normalize import split_top

__all__ = ["choice_label", "parse_time", "stated_values", "strip_choice_label"]

_TIME_RE = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(?:([ap])\.?\s*m\.?|(noon|midnight))?$")
_HOUR_RE = re.compile(r"^(\d{1,2})\s*(?:([ap])\.?\s*m\.?)$")  # `9 a.m.`: a time only with its meridiem
_LABEL_RE = re.compile(
    r"^\s*(?:\\(?:textbf|text|mathrm|mathbf)\s*\{\s*\(?\s*([A-E])\s*\)?\s*\}|\(([A-E])\)|([A-E])\)|([A-E])\.(?=\s))\s*"
)


def parse_time(raw: str) -> int | None:
    """Minutes after midnight of a clock time written with a colon (None when `raw` is not one)."""
    s = re.sub(r"\\(?:text|mathrm|textrm|mbox|rm)\s*\{([^{}]*)\}", r" \1 ", raw)
    s = s.replace("{:}", ":").replace("$", "")
    s = re.sub(r"\\[,;!: ]|~|[{}]", " ", s)
    s = re.sub(r"\s+", " ", s).strip().lower()
    s = re.sub(r"\s*:\s*", ":", s).rstrip(". ")  # `m.` loses its point too; the pattern allows that
    if hour := _HOUR_RE.match(s):
        hours, minutes, meridiem, word = int(hour.group(1)), 0, hour.group(2), None
    elif m := _TIME_RE.match(s):
        hours, minutes, meridiem, word = int(m.group(1)), int(m.group(2)), m.group(4), m.group(5)
    else:
        return None
    if minutes > 59 or hours > 23 or ((meridiem or word) and not 1 <= hours <= 12):
        return None
    if word:  # `12:00 noon`, `12:00 midnight`
        meridiem = "p" if word == "noon" else "a"
    if meridiem:
        hours = hours % 12 + (12 if meridiem == "p" else 0)
    return hours * 60 + minutes


def choice_label(text: str) -> str | None:
    """The letter of a leading choice label (`\\textbf{(B)} 27` → B), or None. A label that is an
    operand (`\\text{(E)}+1`) is no label."""
    m = _label(text)
    return next((g for g in m.groups() if g), None) if m else None


def strip_choice_label(text: str) -> str:
    """The value after a leading choice label (`\\textbf{(B) } 27` → `27`); unchanged when the label
    stands alone (a label is no value)."""
    m = _label(text)
    rest = text[m.end():].strip() if m else ""
    return rest if rest else text


def _label(text: str) -> re.Match | None:
    m = _LABEL_RE.match(text)
    glued = m and len(m.group(0).rstrip()) == m.end()  # `\\text{(E)}+1` is an operand; `D) -3` a label
    return m if m and not (glued and re.match(r"[-+*/^=_!')]", text[m.end():])) else None


def stated_values(pred: str) -> str:
    """The value a relation chain states: `x = 7 = 11` → `11`; `x \\approx 11` → `11`;
    `x = \\frac{1}{3} \\approx 0.33` → `\\frac{1}{3}` (exact first). Text without `=`/`\\approx`
    is returned unchanged."""
    parts, seps = split_top(pred, r"\\approx|\\simeq|(?<![<>!\\])=(?!=)")
    if len(parts) == 1:
        return pred
    if not (_is_name(parts[0]) or not parts[0] or not _has_unknown(parts[0])):
        return pred  # `2x = 10` is an equation to solve, not the value 10
    approx = [i for i, sep in enumerate(seps) if sep != "="]
    before = parts[approx[0]] if approx else ""  # the value written just before the first approximation
    return before if before and not _is_name(before) else parts[-1]


def _has_unknown(text: str) -> bool:
    """A letter left once commands and the names of functions applied to values are removed: `2x` has one;
    `3-\\sqrt{4}` and `t(g(16))` (a function at a number, a value written out) have none."""
    return bool(re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+|[A-Za-z]+(?=\()", "", text)))


def _is_name(text: str) -> bool:
    """A variable or function name on the left of a relation: `x`, `x_{0}`, `f(x)`, `(t,u)`, `AB`."""
    return bool(re.fullmatch(r"(?:[A-Za-z]|\\[A-Za-z]+)(?:_\{?\w+\}?)?(?:\([a-z, ]*\))?|\((?:[a-z], ?)+[a-z]\)"
                             r"|[A-Z]{1,3}", text.strip()))
