"""Normalisation of gold and predicted answers: string rewrites only (nothing is parsed or evaluated).

Both sides go through `normalize`; the prediction additionally through `strip_assignment` when the
gold is not an equation. The rules, in order (docs/grading.md lists them with examples):
zero-width and bidi characters removed; unicode math → LaTeX (`√53` → `\\sqrt{53}`); math written as
code (`pi/4`, `sqrt(2)`, `ln(3)`) → LaTeX; math delimiters (`$`, `\\(`, `\\[`) and `\\displaystyle`; spacing macros
(`\\,` `\\!` `\\;` `\\quad` `~`); `\\left`/`\\right`; `\\dfrac`/`\\tfrac` → `\\frac`; `\\frac12` →
`\\frac{1}{2}`; a whole-answer `\\text{..}`/`\\textbf{..}`/`\\mathrm{..}` unwrapped; trailing units
(`\\text{ cm}^2`, "45 minutes", "km/h", words after a plain number in Latin, Greek or Cyrillic letters: "5 apples",
"8 кусков"), except a scale word, which multiplies ("18 thousand dollars" → `18000`, "18 тысяч" → `18000`: the
value, not 18 with a unit); degrees
(`^\\circ`, `°`, "degrees"); dollar signs and a number's euro sign (`18 €`);
percent signs (remembered, see `has_percent`); `{,}` → `,`; thousands separators in a plain number
(`58,500` → `58500`, `1 000` → `1000`); trailing punctuation; computer e-notation inside an
expression (`4.5e33` → `4.5\\times10^{33}`, because math-verify 0.9.0 reads `4.5e33` as 4.5·e·33).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from dhpo_suite.grading.tidy import SCALES, strip_invisible

__all__ = [
    "has_percent", "is_text_answer", "normalize", "split_top", "split_top_level", "strip_assignment", "text_key",
]

_UNICODE = {
    "\u2212": "-", "\u2013": "-", "\u00d7": "\\times ", "\u22c5": "\\cdot ", "\u00b7": "\\cdot ",
    "\u221a": "\\sqrt", "\u03c0": "\\pi ", "\u2264": "\\le ", "\u2265": "\\ge ", "\u221e": "\\infty ",
    "\u00b0": "^\\circ", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
}
_UNITS_LONG = (
    "cm|mm|km|km/h|kmh|m/s|mph|kph|inch|inches|in|ft|feet|foot|yd|yard|yards|mile|miles|"
    "kg|mg|lb|lbs|pound|pounds|ounce|ounces|oz|sec|second|seconds|min|mins|minute|minutes|hr|hrs|"
    "hour|hours|day|days|week|weeks|month|months|year|years|dollar|dollars|cent|cents|"
    "unit|units|meter|meters|metre|metres|square\\s+units|sq\\s+units|people|students|cookies"
)
_NUMBER = r"[-+]?(?:\d[\d,]*(?:\.\d*)?|\.\d+)"
_TEXT_WRAP_RE = re.compile(r"^\\(?:text|textbf|textrm|mathrm|mathbf|mbox|rm)\s*\{([^{}]*)\}$")
_TRAILING_TEXT_RE = re.compile(  # `\\mu\\text{m}`: a prefix before the unit's text
    r"(?<=\S)\s*(?:\\mu\s*)?\\(?:text|mbox|mathrm|textrm|rm)\s*\{\s*[^{}]*\}(?:\s*\^\s*\{?\d\}?)?\s*$"
)
_TRAILING_UNIT_RE = re.compile(rf"(?<=[\d}}])\s*(?:{_UNITS_LONG})(?:\s*\^\s*\{{?\d\}}?)?\s*$")
_SHORT_UNIT_RE = re.compile(rf"^({_NUMBER})\s*(?:m|s|g|h)(?:\^\{{?\d\}}?)?$")
_LETTER = "[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]"  # Latin (accented too), Greek, Cyrillic
# "5 apples", "75 días", "8 кусков" (Russian "8 pieces"): words after a plain number are a unit
_TRAILING_WORDS_RE = re.compile(rf"^({_NUMBER})\s+{_LETTER}{{3,}}(?:\s+{_LETTER}+)*$")
_SCALE = {  # word: factor; number words' English scales, then the languages of `answer_line.ANSWER_WORDS`
    **SCALES, "trillion": 10**12,
    "tausend": 10**3, "millionen": 10**6, "mio": 10**6, "milliarde": 10**9, "milliarden": 10**9, "mrd": 10**9,
    "millón": 10**6, "millones": 10**6, "milione": 10**6, "milioni": 10**6, "milhão": 10**6, "milhões": 10**6,
    "miljoen": 10**6, "milliard": 10**9, "milliards": 10**9, "miliardo": 10**9, "miliardi": 10**9,
    "miljard": 10**9, "miljarder": 10**9, "milliarder": 10**9, "tusen": 10**3, "tusind": 10**3,
    "miljon": 10**6, "miljoner": 10**6, "millioner": 10**6,  # sv/da/no
    "tysiąc": 10**3, "tysiące": 10**3, "tysięcy": 10**3, "tys": 10**3, "milion": 10**6, "miliony": 10**6,
    "milionów": 10**6, "mln": 10**6, "miliard": 10**9, "miliardy": 10**9, "miliardów": 10**9, "mld": 10**9,
    "tisíc": 10**3, "tisíce": 10**3, "milionů": 10**6, "miliarda": 10**9,  # pl, cs/sk
    "milyon": 10**6, "milyar": 10**9,  # tr ("bin", a thousand, is left out: "18 bins" is English)
    "ribu": 10**3, "juta": 10**6, "miliar": 10**9, "bilion": 10**9,  # id/ms
    "nghìn": 10**3, "ngàn": 10**3, "triệu": 10**6, "tỷ": 10**9, "tỉ": 10**9,  # vi
    "тысяча": 10**3, "тысячи": 10**3, "тысяч": 10**3, "тысячу": 10**3, "тыс": 10**3, "миллион": 10**6,
    "миллиона": 10**6, "миллионов": 10**6, "млн": 10**6, "миллиард": 10**9, "миллиарда": 10**9,
    "миллиардов": 10**9, "млрд": 10**9, "тисяча": 10**3, "тисячі": 10**3, "тисяч": 10**3, "тис": 10**3,
    "мільйон": 10**6, "мільйони": 10**6, "мільйонів": 10**6, "мільярд": 10**9,  # ru, uk
    "χίλια": 10**3, "χιλιάδες": 10**3, "εκατομμύριο": 10**6, "εκατομμύρια": 10**6,
    "δισεκατομμύριο": 10**9, "δισεκατομμύρια": 10**9,  # el
}
_SCALE_WORDS = "|".join(sorted(_SCALE, key=len, reverse=True))  # longest first: `millionen` before `million`
_SCALED_RE = re.compile(  # "18 thousand", "1.5 \\text{ billion} dollars", "\\$2 million": a number times its scale
    rf"^(?:\\?\$)?\s*({_NUMBER})\s*(?:\\(?:text|mbox|mathrm)\s*\{{\s*)?({_SCALE_WORDS})s?\b\.?\}}?(?:\s+{_LETTER}.*)?$",
    re.IGNORECASE)
_DEGREES_RE = re.compile(r"\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|\s*\bdegrees?\b")
_THOUSANDS_RE = re.compile(r"^[-+]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$")  # `0,204` is a list
_SPACED_THOUSANDS_RE = re.compile(r"^[-+]?[1-9]\d{0,2}(?: \d{3})+(?:\.\d+)?$")
_E_NOTATION_RE = re.compile(r"(?<![\w.\\])(\d+(?:\.\d*)?|\.\d+)[eE]([-+]?\d+)(?![\w.])")
_APPROX_PREFIX_RE = re.compile(r"^(?:\\approx|\\sim|\\simeq|=)\s*")
_NAME_TOKEN = (r"(?:\\[a-zA-Z]+(?:\s*\{[A-Za-z ]*\})?|[a-zA-Z]|_\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|_\w"
               r"|\([a-z](?:,\s*[a-z])*\)|')")
_ASSIGNMENT_RE = re.compile(  # `x =`, `f(x) =`, `b_1 =`, `\mathbf{proj}_{\mathbf{b}}\mathbf{a} =`: a name, no digit
    rf"^(?=[^=]{{0,80}}=)(?:{_NAME_TOKEN}\s*){{1,12}}=\s*(?=[^=]*$)"
)
_PLAIN_FUNCTION_RE = re.compile(r"\b(sqrt|ln|log|exp|sin|cos|tan)\s*(?=\()")
_PLAIN_GREEK_RE = re.compile(r"\b(pi|theta|alpha|beta|gamma|lambda|sigma|mu|omega|phi|infty)\b")
_SQRT_RE = re.compile(r"\u221a\s*(\d+(?:\.\d+)?|[A-Za-z]|\\[A-Za-z]+|\{[^{}]*\}|\([^()]*\))")


def normalize(answer: str) -> str:
    """The answer with presentation-only differences removed (see the module docstring)."""
    s = strip_invisible(answer).strip()
    s = _SQRT_RE.sub(lambda m: "\\sqrt{" + m.group(1).strip("(){}") + "}", s)  # `√53`, `2√(x+1)`
    for char, latex in _UNICODE.items():
        s = s.replace(char, latex)
    s = _plain_math(_strip_delimiters(s))
    s = _APPROX_PREFIX_RE.sub("", s)  # "\\approx 1.62" is the number 1.62
    # MATH writes thousands `10,\\!080` (negative thin space after the comma): one number, not a list
    s = re.sub(r"(?<=\d),\s*\\!\s*(?=\d{3}(?!\d))", ",", s).replace("{,}", ",").replace("{:}", ":")
    s = re.sub(r"(?<!\\)\\(?:,|!|;|:|quad|qquad|\s)|~", " ", s)  # not `\\` (a row break)
    s = re.sub(r"\\(?:left|right|bigl|bigr|Bigl|Bigr|big|Big)(?![a-zA-Z])\s*", "", s)
    s = re.sub(r"\\[dt]frac", r"\\frac", s)
    s = s.replace("\\varnothing", "\\emptyset")
    s = re.sub(r"\\frac(\d)(\d)", r"\\frac{\1}{\2}", s)
    s = _scaled(s) or _strip_units(s)
    s = _DEGREES_RE.sub("", s)
    s = s.replace("\\$", "").replace("$", "").replace("\\%", "").replace("%", "")
    s = re.sub(r"(?<=\d)\s*€|€\s*(?=\d)", "", s)  # `18 €`, `€18`: the euro sign of a number, as its `$`
    s = s.replace("{,}", ",")
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"(?<!\\)([(\[])\s+|\s+(?=[)\]])", r"\1", s)
    s = re.sub(r"(?:[.;:?,]|\\\.|\\\\)+$", "", s).strip()  # a trailing `\\` is a row break
    if _THOUSANDS_RE.match(s):
        s = s.replace(",", "")
    elif _SPACED_THOUSANDS_RE.match(s):
        s = s.replace(" ", "")
    return s if _is_plain_e_number(s) else _E_NOTATION_RE.sub(r"\1\\times10^{\2}", s)


def has_percent(answer: str) -> bool:
    """True when the answer is written with a percent sign (`8\\%`, `8%`)."""
    return "%" in answer


def strip_assignment(pred: str) -> str:
    """`x = 5` → `5`, `f(x) = x+1` → `x+1`: the variable name is presentation when the gold has none."""
    return _ASSIGNMENT_RE.sub("", pred, count=1)


def is_text_answer(normalized: str) -> bool:
    """A word answer (`Evelyn`, `east`, `(C)`): compared as text, never parsed as symbols."""
    return bool(re.fullmatch(r"[A-Za-z]+(?: [A-Za-z]+)*", normalized.strip("() ")))


def text_key(normalized: str) -> str:
    """Key for comparing word answers: case, spaces and enclosing parentheses ignored."""
    return re.sub(r"\s+", "", normalized.strip("() ")).casefold()


def split_top_level(text: str) -> list[str]:
    """Split at commas outside (), [], {} (`(1,2), 3` → [`(1,2)`, `3`])."""
    return split_top(text, ",")[0]


def split_top(text: str, pattern: str) -> tuple[list[str], list[str]]:
    """Split at `pattern` outside (), [], {}: (parts stripped, separators)."""
    parts, seps, depth, start = [], [], 0, 0
    regex = re.compile(pattern)
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0:
            m = regex.match(text, i)
            if m and m.end() > i:
                parts.append(text[start:i].strip())
                seps.append(m.group(0))
                start = i = m.end()
                continue
        i += 1
    parts.append(text[start:].strip())
    return parts, seps


def _plain_math(s: str) -> str:
    """Math written as code (`pi / (2 * sqrt(2))`, `0.5 * ln(3)`, `theta^2`: JSON answers) as LaTeX; only
    in an answer with no LaTeX command."""
    if "\\" in s or not re.search(r"[a-z]{2}", s):
        return s
    s = _PLAIN_GREEK_RE.sub(r"\\\1 ", s)
    s = re.sub(r"\bsqrt\s*\(([^()]*)\)", r"\\sqrt{\1}", s)
    return _PLAIN_FUNCTION_RE.sub(r"\\\1", s).strip()


def _strip_delimiters(s: str) -> str:
    s = re.sub(r"\\displaystyle\s*", "", s)
    for pattern in (r"^\$\$(.*)\$\$$", r"^\$(.*)\$$", r"^\\\((.*)\\\)$", r"^\\\[(.*)\\\]$"):
        match = re.match(pattern, s, re.DOTALL)
        if match:
            s = match.group(1).strip()
    while match := _TEXT_WRAP_RE.match(s):
        s = match.group(1).strip()
    return s


def _scaled(s: str) -> str | None:
    """`18 thousand` → `18000` (exact, in decimal), None when `s` is not a number followed by a scale word."""
    match = _SCALED_RE.match(s.strip())
    if not match:
        return None
    try:
        value = Decimal(match.group(1).replace(",", "")) * _SCALE[match.group(2).lower()]
    except InvalidOperation:
        return None
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _strip_units(s: str) -> str:
    for _ in range(3):  # "5 \text{ m}\text{/s}" has two trailing groups
        stripped = _TRAILING_TEXT_RE.sub("", s)
        stripped = _TRAILING_UNIT_RE.sub("", stripped)
        if stripped == s or not stripped.strip():
            break
        s = stripped
    match = _SHORT_UNIT_RE.match(s.strip()) or _TRAILING_WORDS_RE.match(s.strip())
    return match.group(1) if match else s


def _is_plain_e_number(s: str) -> bool:
    """`4.5e33` alone stays as it is: `tolerance.parse_number` reads it exactly."""
    return bool(re.fullmatch(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)[eE][-+]?\d+", s))
