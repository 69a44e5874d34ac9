"""Final-answer extraction: pure string scanning in linear time; nothing is parsed or evaluated.

`extract_final(text)` gives (answer, answer_source), first rule that applies:
1. "boxed": the last *complete* `\\boxed{...}` / `\\fbox{...}` (nested braces matched, `\\{`/`\\}`
   skipped; `\\boxed 5` takes the next token), unless an answer line written *after* it states a
   value (`\\boxed{200}` ... "Final Answer: The final answer is $10455$"): the box was intermediate;
2. "marker": the last "final answer is/:", "the answer is", "Answer:" or "####" line: its first math
   segment, or, when the line is prose ("The largest $n$ is 34."), what follows its last "is";
   "I hope it is correct." is cut off;
3. "fallback" (no box, no marker): the last math segment (`$...$`, `\\(...\\)`, `\\[...\\]`) taken
   whole, or the last *standalone* number, whichever ends later. A digit inside a word (`AZYUK2A`),
   a denominator (`1/2`), an exponent, a subscript or an interval end is never taken alone, so the
   fallback cannot turn part of a wrong answer into a right one.
An empty box gives (None, None) (the model answered nothing). Before the rules, a made-up next problem
("Problem: ..." after the first stated answer, as base models write after worked examples) is cut off.
An answer line that lists math segments (`$2$ and $3$`) gives them as one list (`2, 3`).
"""

from __future__ import annotations

import re

from dhpo_suite.grading.fallback import answer_tag, committed_sentence, escape_currency, looks_cut

__all__ = ["extract_answer", "extract_final", "final_box_group"]

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\b")
_PHRASE_RE = re.compile(
    r"(?:final\s+answer\s*(?:is|:)|the\s+answer\s+is|^\s*[*_#]*\s*answer\s*[*_]*\s*:[*_]*"
    r"|^\s*answer\s*(?=\$|\\\[|\\\()|####)\s*:?",
    re.IGNORECASE | re.MULTILINE,
)
_NEXT_PROBLEM_RE = re.compile(  # `Problem:`, `**Problem 2:**`, `Subproblem 1:`, `## Question 3:`, `Exercise:`
    r"\n\s*(?:#+\s*|\*\*)?(?:(?:Sub-?problem|Problem|Question|Exercise)(?:\s*\d+)?\s*\**\s*[:.]|Q\s*\d*\s*:)",
    re.IGNORECASE)
_CHAT_TURN_RE = re.compile(r"\n\s*(?:User|Human|Assistant|USER|HUMAN|ASSISTANT)\s*:")
_OPERATOR_BEFORE_RE = re.compile(r"(?:[-+*/^\u00d7\u00f7]|\\times|\\cdot|\\div)$")
_OPERATOR_AFTER_RE = re.compile(r"[-+*/^!\u00d7\u00f7]|\\times|\\cdot|\\div|\\frac|[xX]\s*(?:\\\$)?\d")
_LIST_GLUE_RE = re.compile(r"\s*(?:,|and|or|,\s*and|,\s*or)?\s*", re.IGNORECASE)
_NAME_RE = re.compile(r"(?:[A-Za-z]{1,3}|\\[A-Za-z]+)(?:_\{?\w+\}?)?(?:\([a-z]\))?")  # n, AB, x_1, f(x)
_BLOCK_RE = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.DOTALL)
_HOPE_RE = re.compile(r"\s*I hope it is correct.*$", re.IGNORECASE | re.DOTALL)
_CONNECTIVE_RE = re.compile(r"\s(?:is|are|equals|was|=)\s", re.IGNORECASE)
_STANDALONE_RE = re.compile(  # a number not glued to a word, a fraction bar, an exponent, a subscript or a list
    r"(?<![\w.,^_{}\\/$-])(?:\\\$)?-?(?:[1-9]\d{0,2}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?:[eE][-+]?\d+)?(?![\w^_/]|[.,]\d|,\s*[-+]?\d)"
)
_INLINE_MATH_RE = re.compile(  # `\$` inside math is a dollar sign; `$$...$$` pairs before `$...$`
    r"(?<!\\)\$\$((?:\\.|[^$\\])+)\$\$|(?<!\\)\$((?:\\.|[^$\\])+)(?<!\\)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]"
)
_PHRASE_TAIL_CHARS = 300  # an answer after "the answer is" is short; a paragraph is not an answer
_MAX_BOX_CANDIDATES = 50  # bounds work on adversarial text made of thousands of unclosed boxes


def extract_answer(text: str | None, truncated: bool = False) -> str | None:
    """The final answer in `text`, or None. See the module docstring for the order of rules."""
    return extract_final(text, truncated)[0]


def extract_final(text: str | None, truncated: bool = False,
                  problem: str | None = None) -> tuple[str | None, str | None]:
    """(answer, answer_source: "boxed", "marker" or "fallback"); (None, None) when nothing is stated.

    `truncated`: the response was stopped at the token budget; only a box or an answer line written
    before the cut counts (never the fallback). `problem`: the problem text, when known; a response
    that ends by restating it gets no fallback answer."""
    if not text:
        return None, None
    text = escape_currency(_before_next_problem(text))
    boxes = _final_boxes(text)
    phrase = _after_phrase(text)
    if boxes and not (phrase is not None and phrase[1] > boxes[-1][1] and phrase[2]):
        return boxes[-1][2].strip(), "boxed"
    if phrase is not None:  # also when it states a value after the last box: that box was intermediate
        return phrase[0], "marker"
    tag = answer_tag(text)
    if tag is not None:  # `<answer> ... </answer>`: an answer region, whose last statement is read
        return _committed_answer(tag, None, "marker")
    if truncated or looks_cut(text):
        return None, None
    return _committed_answer(text, problem, "fallback")


def _committed_answer(text: str, problem: str | None, source: str) -> tuple[str | None, str | None]:
    committed = committed_sentence(text, problem)
    answer = _fallback(*committed) if committed else None
    return (answer, source) if answer else (None, None)


def final_box_group(text: str, span: int = 400) -> list[str]:
    """The last boxes written together (`\\boxed{69} and \\boxed{84}`): complete, not nested in each
    other, each starting within `span` characters of the last one. Boxes further back are
    intermediate results, not part of the final answer."""
    boxes = _final_boxes(text)
    if not boxes:
        return []
    last = boxes[-1][0]
    return [content.strip() for start, _, content in boxes if last - start <= span]


def _final_boxes(text: str) -> list[tuple[int, int, str]]:
    """(start, end, content) of the last complete, non-nested boxes (at most 50), in text order."""
    starts = [m.end() for m in _BOX_RE.finditer(text)]
    if not starts:
        return []
    candidates = starts[-_MAX_BOX_CANDIDATES:]
    closing = _matching_braces(text, candidates[0])
    found: list[tuple[int, int, str]] = []  # (start, end, content), scanning from the end
    for start in reversed(candidates):
        pos = start
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if pos < len(text) and text[pos] == "{":
            end = closing.get(pos)
            if end is None:
                continue  # unclosed (truncated) box: try the one before it
            content = text[pos + 1 : end]
            if not content.strip():
                continue  # an empty box states nothing: the complete box before it is the answer
        else:
            token = re.match(r"[^\s$]+", text[pos : pos + 200])
            if not token:
                continue
            end, content = pos + token.end(), token.group(0)
        if found and end > found[-1][0]:  # an outer box around a later one: keep the inner
            continue
        found.append((start, end, content))
    return list(reversed(found))


def _matching_braces(text: str, begin: int) -> dict[int, int]:
    """Map from each `{` at or after `begin` to its matching `}` (one stack pass, O(n))."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    i, n = max(begin, 0), len(text)
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2  # `\{` and `\}` are literal braces, not grouping
            continue
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def _before_next_problem(text: str) -> str:
    """The response up to a made-up next problem: a base model prompted with worked examples often
    answers ("Final Answer: ... I hope it is correct.") and goes on with "Problem: ..." and a solution
    of its own. Only a header after the first stated answer counts."""
    turn = _CHAT_TURN_RE.search(text)
    if turn and text[: turn.start()].strip():
        text = text[: turn.start()]  # an invented chat turn: nothing after it answers this problem
    first = _NEXT_PROBLEM_RE.search(text)
    if not first:
        return text
    if text[: first.start()].strip() and committed_sentence(text[: first.start()]):
        return text[: first.start()]  # "She has 5 apples left.\n\nQuestion: ... Answer: 7": 5 was stated
    marks = [m.start() for m in (_BOX_RE.search(text), _PHRASE_RE.search(text)) if m]
    if not marks:
        return text
    header = _NEXT_PROBLEM_RE.search(text, min(marks))
    return text[: header.start()] if header else text


def _after_phrase(text: str) -> tuple[str, int, bool] | None:
    """(answer, position, states_a_value) after the last answer phrase, or None."""
    last = max(_PHRASE_RE.finditer(text), key=re.Match.start, default=None)
    if last is None:
        return None
    window = _HOPE_RE.sub("", text[last.end() : last.end() + _PHRASE_TAIL_CHARS]).strip()
    line = window.split("\n", 1)[0].strip()
    block = _BLOCK_RE.match(window)  # `\[ ... \]` / `$$ ... $$` may span lines
    if block:
        line = block.group(0).replace("\n", " ")
    line = _after_connective(line)
    math = _INLINE_MATH_RE.search(line)
    answer = _math_content(math) if math else line
    segments = list(_INLINE_MATH_RE.finditer(line))
    if len(segments) > 1 and all(_LIST_GLUE_RE.fullmatch(line[a.end() : b.start()])
                                 for a, b in zip(segments, segments[1:])):
        answer = ", ".join(_math_content(m) for m in segments)  # `$2$ and $3$`: both are the answer
    answer = re.sub(r"[.;:,\s]+$", "", answer.strip().strip("*").strip())  # `5!` keeps its factorial
    if not answer:
        return None
    return answer, last.start(), bool(math) or bool(re.search(r"\d", answer))


def _math_content(match: re.Match) -> str:
    return next(g for g in match.groups() if g is not None).strip()


def _after_connective(line: str) -> str:
    """`The largest $n$ is 34.` → `34.`: an answer line in prose states its value after "is"."""
    outside = _INLINE_MATH_RE.sub(lambda m: "\0" * len(m.group(0)), line)  # never split inside math
    cuts = [m.end() for m in _CONNECTIVE_RE.finditer(outside)]
    if not cuts:
        return line
    first = _INLINE_MATH_RE.search(line)
    if first and first.start() < cuts[-1] and not _is_name(_math_content(first)):
        return line  # `$5$, which is less than 7`: the value came first
    tail = line[cuts[-1]:]
    return tail if re.search(r"\d|\$|\\\(", tail) else line


def _is_name(math: str) -> bool:
    """A quantity's name, not its value: `n`, `x_1`, `f(x)`, `\\omega_{\\text{ss}}`, `v_{\\max}` (no digit
    outside a subscript)."""
    return bool(_NAME_RE.fullmatch(math)) or not re.search(
        r"\d", re.sub(r"_\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|_\w", "", math))


def _fallback(text: str, after: int = 0) -> str | None:
    """The first math segment (whole) or standalone number that starts at or after `after` (the end
    of the sentence's last connective); without one, the candidate that ends last."""
    found = [(m.start(), m.end(), _math_content(m)) for m in _INLINE_MATH_RE.finditer(text)]
    masked = _INLINE_MATH_RE.sub(lambda m: " " * len(m.group(0)), text)
    found += [(m.start(), m.end(), m.group(0)) for m in _STANDALONE_RE.finditer(masked) if not _operand(masked, m)]
    found = [c for c in found if c[2]]
    if not found:
        return None
    later = [c for c in found if c[0] >= after]
    return min(later)[2] if later else max(found, key=lambda c: c[1])[2]


def _operand(text: str, number: re.Match) -> bool:
    """True when the number is an operand (`2 + 3`, `5 \\times 10^3`, `5!`), not a value stated alone."""
    before, after = text[max(0, number.start() - 12) : number.start()].rstrip(), text[number.end() :].lstrip()
    return bool(_OPERATOR_BEFORE_RE.search(before) or _OPERATOR_AFTER_RE.match(after))
