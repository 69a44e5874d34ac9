"""Grading one response against its accepted golds. Runs ONLY inside a worker process.

Pipeline per gold (first match wins): extract → normalise both sides → identical strings → word
answers compared as text → number literals under the tolerance policy (`tolerance.py`) → LaTeX parsed
by math-verify (antlr4 4.13.2, see `runtime.py`) and compared numerically (numeric gold) or by
`math_verify.verify` (expressions, tuples, intervals, sets, equations). Only LaTeX extraction is
used: math-verify's plain-expression mode calls sympy's `parse_expr`, which evaluates Python.
"""

from __future__ import annotations

import logging
import os
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import cache, lru_cache

from dhpo_suite.grading.arith import exact_value
from dhpo_suite.grading.extract import RULE_SOURCE, extract_rule, final_box_group
from dhpo_suite.grading.forms import choice_label, parse_time, stated_values, strip_choice_label
from dhpo_suite.grading.normalize import (
    has_percent,
    is_text_answer,
    normalize,
    split_top_level,
    strip_assignment,
    text_key,
)
from dhpo_suite.grading.structural import equation_parts, mirrored, term_key, unit_conflict
from dhpo_suite.grading.tolerance import Num, numbers_match, parse_number

__all__ = ["MAX_ANSWER_CHARS", "grade_one", "warm_up"]

MAX_ANSWER_CHARS = 2000  # the longest real gold is ~300 characters; longer "answers" are rambling
Result = tuple[bool, "str | None", str, str, "str | None", "str | None"]


def grade_one(response: str, golds: list[str], bench: str | None = None, truncated: bool = False,
              problem: str | None = None, chars: int | None = None, *, notify=None) -> Result:
    """(correct, extracted, status, reason, answer_source, answer_rule) for one response; `golds` are all
    accepted forms; answer_source is "boxed", "marker", "fallback" or None, answer_rule the finer rule
    (see extract.py).
    `truncated`/`problem` as in `extract_rule`; `chars`: the response's length before the caller cut
    it to its tail (`items.MAX_RESPONSE_CHARS`), said in the reason. `notify(extracted, source)` is
    called as soon as the answer is extracted (the pool keeps it for a timeout verdict)."""
    correct, extracted, status, reason, source, rule = _grade(response, golds, truncated, problem, notify)
    if truncated:
        reason += " (response stopped at the token budget: only a box or answer line counts)"
    if chars is not None and chars > len(response):
        reason += f" (response of {chars:,} characters: only its last {len(response):,} were graded)"
    return correct, extracted, status, reason, source, rule


def _grade(response: str, golds: list[str], truncated: bool, problem: str | None, notify) -> Result:
    extracted, rule = extract_rule(response, truncated, problem)
    source = RULE_SOURCE[rule] if rule else None
    if notify is not None:
        notify(extracted, source, rule)
    if extracted is None:
        return False, None, "no_answer", "no \\boxed{} answer, answer line or committed final statement", None, None
    long_integer = _long_integers(extracted, golds)
    if long_integer is not None:
        return long_integer + (source, rule)
    if len(extracted) > MAX_ANSWER_CHARS:
        return False, extracted[:MAX_ANSWER_CHARS], "ok", (
            f"extracted answer has {len(extracted)} characters (> {MAX_ANSWER_CHARS}); not parsed"
        ), source, rule
    reasons = []
    for answer in _candidates(response, extracted, golds, source):
        for gold in golds:
            correct, reason = match(answer, gold)
            if correct:
                return True, answer, "ok", f"{reason}{f' [gold {gold!r}]' if len(golds) > 1 else ''}", source, rule
            reasons.append(reason)
    return False, extracted, "ok", reasons[0], source, rule


def _long_integers(extracted: str, golds: list[str]) -> tuple[bool, str, str, str] | None:
    """A plain integer of more than 200 digits against integer golds, compared as digit strings (no
    conversion: Python refuses int() of over 4,300 digits, and sympy would be slow)."""
    def digits(text: str) -> str | None:
        m = re.fullmatch(r"\s*\$?\s*(-?)0*(\d+)\s*\$?\s*\.?\s*", text)
        return m.group(1) + m.group(2) if m else None

    pred = digits(extracted)
    if pred is None or len(pred) <= 200 or not all(digits(gold) for gold in golds):
        return None
    same = pred in {digits(gold) for gold in golds}
    return same, extracted, "ok", (f"{len(pred)}-digit integers {'equal' if same else 'differ'} "
                                   "(compared digit by digit)")


def _candidates(response: str, extracted: str, golds: list[str], source: str | None) -> list[str]:
    """The extracted answer, plus the final boxes joined (`\\boxed{69} and \\boxed{84}` → `69, 84`,
    or `\\{69, 84\\}` for a set gold) when a gold lists several answers."""
    shapes = [_list_shape(normalize(gold)) for gold in golds]
    if source != "boxed" or not any(shapes):
        return [extracted]
    group = final_box_group(response)
    joined = ", ".join(group)
    if len(group) < 2 or len(joined) > MAX_ANSWER_CHARS:
        return [extracted]
    return [extracted] + [f"\\{{{joined}\\}}" if shape == "set" else joined for shape in dict.fromkeys(shapes) if shape]


def _list_shape(gold: str) -> str | None:
    """"list" for `69, 84`, "set" for `\\{1, 2, 3\\}`, None for a single answer."""
    if len(split_top_level(gold)) >= 2:
        return "list"
    inner = re.fullmatch(r"\\\{(.*)\\\}", gold.strip())
    return "set" if inner and len(split_top_level(inner.group(1))) >= 2 else None


def match(pred_raw: str, gold_raw: str) -> tuple[bool, str]:
    """(match, reason) for one extracted answer against one gold."""
    gold_time = parse_time(gold_raw)
    if gold_time is not None:
        same = parse_time(pred_raw) == gold_time
        return same, f"clock time {pred_raw!r} {'equals' if same else 'differs from'} gold {gold_raw!r}"
    conflict = unit_conflict(gold_raw, pred_raw)
    if conflict:
        return False, conflict
    gold, pred = normalize(gold_raw), normalize(pred_raw)
    letter, pred_letter = _choice_letter(gold), _choice_letter(pred)
    if letter and pred_letter:
        same = pred_letter == letter
        return same, f"choice {pred_letter} {'is' if same else 'is not'} gold ({letter})"
    if not letter:
        pred = strip_choice_label(pred)  # `\\textbf{(B) } 27` states 27
    if "=" not in gold and not re.search(r"\\approx|\\simeq", gold):
        pred = _stated_value(strip_assignment(pred))
    if not gold:
        return False, "gold is empty after normalisation"
    if not pred:
        return False, "extracted answer is empty after normalisation"
    if has_percent(pred_raw) and not has_percent(gold_raw) and not _plain_number(gold):
        return _percent_of_quantity(pred, gold, pred_raw, gold_raw)
    if pred == gold:
        return True, f"identical after normalisation: {pred!r}"
    if _is_word_gold(gold_raw, gold):
        same = text_key(pred) == text_key(gold)
        return same, f"word answer {'equals' if same else 'differs from'} gold {gold!r}"
    gold_num, pred_num = parse_number(gold), parse_number(pred)
    if gold_num and pred_num:
        return _numbers(gold_num, pred_num, gold_raw, pred_raw)
    gold_val, pred_val = gold_num or _exact(gold), pred_num or _exact(pred)
    if gold_val and pred_val:  # numeric expressions, evaluated exactly (`\\frac12+\\frac13`, `4\\frac49`)
        return _numbers(gold_val, pred_val, gold_raw, pred_raw)
    return _symbolic(gold, pred, gold_num, pred_num, gold_raw, pred_raw)


def _plain_number(gold: str) -> bool:
    """A gold written as a plain integer or decimal (`20`, `12.5`): how the golds of "what percent"
    questions are written, so `20\\%` answers it at face value."""
    return bool(re.fullmatch(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)", gold))


def _percent_of_quantity(pred: str, gold: str, pred_raw: str, gold_raw: str) -> tuple[bool, str]:
    """A percentage answering a gold that is no plain number (`4 4/9\\%` for 40/9): only its
    hundredth may match; the percent sign is not presentation there."""
    gold_val, pred_val = parse_number(gold) or _exact(gold), parse_number(pred) or _exact(pred)
    if gold_val and pred_val:
        correct = numbers_match(gold_val, _hundredth(pred_val))[0]
        verb = "equals" if correct else "is not"
        return correct, f"the percentage {pred_raw!r} ({pred}/100) {verb} gold {gold_raw!r}"
    return False, f"a percentage {pred_raw!r} does not answer gold {gold_raw!r}, which is no percentage"


def _exact(text: str) -> Num | None:
    found = exact_value(text)
    return Num(found[0], None, 0, text) if found else None


def _choice_letter(answer: str) -> str | None:
    """B for a multiple-choice answer: `(B)`, `B`, or a labelled choice (`(B) 27`, `B. x = 42`)."""
    m = re.fullmatch(r"\(?([A-E])\)?", answer.strip())
    return m.group(1) if m else choice_label(answer)


def _stated_value(pred: str) -> str:
    """The value a relation chain states (`x = 5+5+1 = 11` → `11`), unless the chain hedges between
    answers (`x = 1 \\text{ or } x = 2`): then it is left whole and will not match a single gold."""
    if re.search(r"\\text|\\mbox|\bor\b|\band\b|\\quad|;", pred):
        return pred
    items = split_top_level(pred)
    if len(items) > 1:  # `x = 2, x = 3` states 2 and 3, never just the last 3
        return ", ".join(stated_values(strip_assignment(item)) for item in items)
    return stated_values(pred)


def _numbers(gold: Num, pred: Num, gold_raw: str, pred_raw: str) -> tuple[bool, str]:
    """Numeric comparison, also trying the percent reading (`8\\%` = 0.08) of either side."""
    correct, reason = numbers_match(gold, pred)
    if correct:
        return correct, reason
    if has_percent(gold_raw) and not has_percent(pred_raw) and numbers_match(_hundredth(gold), pred)[0]:
        return True, f"{pred.text} equals the percentage {gold.text}% as a fraction"
    if has_percent(pred_raw) and not has_percent(gold_raw) and numbers_match(gold, _hundredth(pred))[0]:
        return True, f"the percentage {pred.text}% equals {gold.text}"
    return correct, reason


def _hundredth(num: Num) -> Num:
    """The number a percentage states (`8\\%` → 0.08), its rounding unit scaled alike."""
    return Num(num.value / 100, num.ulp and num.ulp / 100, num.sig, num.text + "%")


def _symbolic(gold, pred, gold_num, pred_num, gold_raw, pred_raw) -> tuple[bool, str]:
    gold_expr = parse_latex(gold)
    if gold_expr is None or not keeps_variables(gold, gold_expr):
        if equation_parts(gold) and equation_parts(pred):
            return _equation(gold, pred)
        same = loose_key(gold) == loose_key(pred)
        why = "not parseable" if gold_expr is None else f"misread as {_short(gold_expr)}"
        return same, f"gold {gold!r} {why} by math-verify; compared as text: {'same' if same else 'differs'}"
    pred_expr = parse_latex(pred)
    if pred_expr is None:
        return False, f"prediction {pred!r} is not parseable by math-verify"
    if not keeps_variables(pred, pred_expr):
        return False, f"prediction {pred!r} misread by math-verify as {_short(pred_expr)}; not compared"
    if gold_num is not None:
        value = numeric_value(pred_expr)
        if value is None:
            return False, f"prediction {pred!r} is not a real number (gold {gold!r} is)"
        return _numbers(gold_num, Num(value, None, 0, pred), gold_raw, pred_raw)
    if pred_num is not None and not pred_num.exact:
        value = numeric_value(gold_expr)
        if value is not None:
            return numbers_match(Num(value, None, 0, gold), pred_num)
    return _verify(gold_expr, pred_expr, gold, pred)


def _equation(gold: str, pred: str) -> tuple[bool, str]:
    """An equation gold that math-verify misreads, compared side by side (structural.py)."""
    (gl, rel, gr), (pl, prel, pr) = equation_parts(gold), equation_parts(pred)  # type: ignore[misc]
    rel, prel = rel.replace("\\lt", "<").replace("\\gt", ">"), prel.replace("\\lt", "<").replace("\\gt", ">")
    orders = [(pl, pr)] if prel == rel else []
    orders += [(pr, pl)] if mirrored(prel) == rel else []
    for number, (left, right) in enumerate(orders):  # the swapped reading by text only: verify is slow there
        if _same_side(gl, left, number == 0) and _same_side(gr, right, number == 0):
            return True, f"equation {pred!r} has the sides and relation of gold {gold!r}"
    return False, f"equation {pred!r} differs from gold {gold!r} side by side"


def _same_side(gold: str, pred: str, use_verify: bool = True) -> bool:
    """Equal as text, or equivalent under math-verify when both parse with the same variable letters
    (case kept: math-verify lower-cases `R` to `r`)."""
    if loose_key(gold) == loose_key(pred) or term_key(gold) == term_key(pred):
        return True
    if not use_verify or _letters(gold) != _letters(pred):
        return False
    gold_expr, pred_expr = parse_latex(gold), parse_latex(pred)
    if gold_expr is None or pred_expr is None or not keeps_variables(gold, gold_expr):
        return False
    return keeps_variables(pred, pred_expr) and _verify(gold_expr, pred_expr, gold, pred)[0]


def _letters(text: str) -> set[str]:
    """Every letter outside commands, `\\text{}` and subscripts, case kept (`kx` has k and x)."""
    return set(re.findall(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+(?:\s*\{[^{}]*\})?|_\{[^{}]*\}|_\w", " ", text)))


def _verify(gold_expr, pred_expr, gold: str, pred: str) -> tuple[bool, str]:
    from math_verify import verify

    # allow_set_relation_comp: `x \\geq 5` answers `[5, \\infty)` as well as the reverse (same set)
    same = verify([gold_expr], [pred_expr], timeout_seconds=None, raise_on_error=True,
                  allow_set_relation_comp=True)
    verb = "equivalent to" if same else "not equivalent to"
    return same, f"math-verify: {pred!r} {verb} gold {gold!r}"


@lru_cache(maxsize=8192)
def parse_latex(text: str):
    """The sympy object math-verify reads from `\\boxed{text}`, or None (LaTeX extraction only)."""
    from math_verify import LatexExtractionConfig, parse
    from sympy import Basic, MatrixBase

    parsed = parse(
        "\\boxed{" + text + "}",
        extraction_config=[LatexExtractionConfig(boxed_match_priority=0)],
        fallback_mode="no_fallback",
        parsing_timeout=None,
    )
    return next((item for item in parsed if isinstance(item, (Basic, MatrixBase))), None)


def numeric_value(expr) -> Fraction | None:
    """Exact Fraction for a rational sympy number, a 50-digit value for a real irrational one."""
    from sympy import Expr

    if not isinstance(expr, Expr) or not expr.is_number:
        return None
    if expr.is_Rational:
        return Fraction(int(expr.p), int(expr.q))
    value = expr.evalf(50)
    if not value.is_real or not value.is_finite:
        return None
    try:
        return Fraction(Decimal(str(value)))
    except (InvalidOperation, ValueError):
        return None


def keeps_variables(text: str, expr) -> bool:
    """False when math-verify's parse dropped or merged variables of `text`.

    math-verify 0.9.0 strips letters it takes for units (`\\frac{37}{4} m` → 37/4,
    `\\frac{1}{3} E_{1}+\\frac{2}{3} E_{2}` → 2/3) and lower-cases symbols (`N=n` → Eq(n, n)); such a
    parse would accept wrong answers, so it is not trusted. Letters used as function names (`f(x)`),
    subscripts, commands, `\\text{}`, `e`, `i` and the `d` of a derivative are not counted.
    """
    letters = _variable_letters(text)
    if not letters:
        return True
    if any(c.islower() and c.upper() in letters for c in letters):
        return False  # `N` and `n` are distinct here, one symbol after parsing
    try:
        symbols = expr.free_symbols
    except AttributeError:
        return False
    parsed = {str(s).split("_")[0][:1].lower() for s in symbols}
    return {c.lower() for c in letters} <= parsed


def loose_key(text: str) -> str:
    """Text with insignificant spaces removed (a space after a command before a letter is kept)."""
    return re.sub(r"(\\[A-Za-z]+)?\s+(?=([A-Za-z])?)",
                  lambda m: (m.group(1) or "") + (" " if m.group(1) and m.group(2) else ""), text)


def _variable_letters(text: str) -> set[str]:
    t = re.sub(r"\\(?:text|mathrm|textrm|operatorname|mbox|begin|end)\s*\{[^{}]*\}", " ", text)
    t = re.sub(r"_\{[^{}]*\}|_[A-Za-z0-9]", " ", t)
    if "\\frac{d" in t or "\\frac{\\partial" in t:
        t = re.sub(r"\bd(?=\s*[A-Za-z\\^])", " ", t)
    t = re.sub(r"\\[A-Za-z]+", " ", t)
    t = re.sub(r"[A-Za-z]+\s*\(", " ", t)  # f(x), u(t), sin(x): names, not variables
    t = re.sub(r"[A-Za-z]{2,}", " ", t)  # words and function names (sin, log, max)
    return set(re.findall(r"[A-Za-z]", t)) - {"e", "i"}


def _short(expr) -> str:
    return str(expr)[:80]


# Answers of the shapes models write. Parsing them once fills ANTLR's prediction (DFA) cache, which
# makes later parses ~2.5x faster; the forkserver does it once and every forked worker inherits it.
WARM_UP = (
    r"\frac{1}{2}", r"-\frac{3}{4}", r"\frac{\sqrt{3}}{2}", r"2\sqrt{10}", r"4-2 \sqrt{3}", r"\sqrt[3]{2}",
    r"\frac{\pi}{4}", r"3\pi", r"\frac{5\pi}{6}", r"\pi r^{2}", r"10^{-3}", r"4.5\times10^{33}",
    r"1.24 \cdot 10^{-8}", r"2^{2/3}", r"e^{-2t}", r"\ln 2", r"\log_{10} 250", r"\sin \theta",
    r"\cos(2x)", r"\arcsin\left(\frac{10}{13}\right)", r"x^{2}+2x+1", r"n^{2}-n-1", r"2n+1",
    r"\frac{x-1}{x+1}", r"a b c", r"(1,2)", r"(1, -2, 3)", r"(-\infty, 0) \cup \{1\}", r"[\frac{1}{2}, 8]",
    r"(2,12) \cup (12,102)", r"(-\sqrt{11},-2)\cup (\sqrt{11},9)", r"\{1,2,3\}", r"1,3,5",
    r"(1,1), (3,2)", r"x=3", r"f(x)=x+1", r"y=2x-3", r"k=2 n-1", r"x \in [0, 1]", r"x > 2",
    r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", r"\begin{pmatrix} -1 \\ 2 \end{pmatrix}",
    r"6+9i", r"\frac{4}{3+3i}", r"76^\circ", r"\frac{270}{7}", r"0.554", r"1.6", r"27648", r"2516_8",
    r"\binom{10}{3}", r"5!", r"\left\lfloor \frac{2n}{3} \right\rfloor", r"|x-1|", r"\infty",
    r"\frac{d x}{d t}=k x-a", r"\hbar \omega", r"\lambda / \sqrt{2}", r"m_{p} c^{2}", r"x_{0} + v_{0} t",
)


@cache  # once per process: a worker forked from the warmed-up forkserver skips it
def warm_up() -> None:
    """Import math-verify, silence its timeout notices (the pool enforces time), fill ANTLR's cache."""
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    import math_verify.grader
    import math_verify.parser

    math_verify.parser.TIMEOUT_WARNING_SHOWN = True
    math_verify.grader.TIMEOUT_WARNING_SHOWN = True
    if os.environ.get("DHPO_GRADER_WARMUP", "1") != "0":  # "0": faster start, slower first parses
        for text in WARM_UP:
            parse_latex(text)
    match("\\frac{1}{2}", "\\sqrt{\\frac{1}{4}}")  # the verify path once
    parse_latex.cache_clear()


def _is_word_gold(gold_raw: str, gold: str) -> bool:
    """`\\text{Evelyn}`, `\\text{(C)}` or a bare word of 4+ letters (`east`); not `x y` (a product)."""
    wrapped = re.fullmatch(r"\s*\$?\\(?:text|textbf|mathrm)\s*\{[^{}]*\}\$?\s*", gold_raw)
    return is_text_answer(gold) and bool(wrapped or re.search(r"[A-Za-z]{4,}", gold))
