"""Final-answer extraction: pure string scanning in linear time; nothing is parsed or evaluated.

An answer is the response's last committed statement of a value, whatever its dress. `extract_rule(text)`
gives (answer, rule); the rules, in the order they apply (README.md of this package lists them with
examples):

0. tidy (`tidy.py`): invisible characters and special tokens go; the response is cut at an invented chat
   turn (`User:`, `<|im_start|>user`) or a made-up next problem (`Problem:`, `Subproblem 1:`) only where
   the text before the cut already states an answer of its own (a box, an answer line or a committed
   sentence that is not a line of the problem), so an echoed prompt is never the whole response; closing
   pleasantries ("I hope this helps!") are dropped;
1. "box" / "boxes": the last *complete* `\\boxed{...}` / `\\fbox{...}` (nested braces matched, `\\{`/`\\}`
   skipped; `\\boxed 5` takes the next token); boxes written as one list (`\\boxed{1}, \\boxed{2} and
   \\boxed{3}`) are taken whole as `1, 2, 3`, never the last alone. An answer line written *after* the last
   box that states a value wins over it (the box was intermediate);
2. "answer line", "A: line", "#### line", "json answer": the last "final answer is/:", "the (correct)
   answer (in words) is", "Answer:", a "Final Answer" heading, GSM8K's `A: 18` and `#### 18`, or a JSON
   `"answer": ...` field: its first math segment, or, when the line is prose ("The largest $n$ is 34."),
   what follows its last "is"; a value on the lines after an empty answer line; a value in number words
   ("two hundred fifty dollars") as its digits;
3. "answer tag": `<answer> ... </answer>`, read as the fallback inside the tag;
4. "bold": the last bold span (`**83**`, `**(-1, 6)**`, `**(C) Plane**`) of the last paragraph that
   states a value, taken whole (a bold label such as `**Step 2:**` is no value);
5. "fallback": the last committed sentence's last math segment (whole), plain tuple or interval (whole), or
   standalone number (see `fallback.py`). A digit inside a word (`AZYUK2A`), a denominator, an exponent,
   a subscript or an element of a tuple is never taken alone.

Rules 4 and 5 never answer for a truncated response (one stopped at the token budget or ending
mid-sentence). An empty box gives no answer.
"""

from __future__ import annotations

import re

from dhpo_suite.grading.answer_line import INLINE_MATH_RE, after_phrase, math_content
from dhpo_suite.grading.fallback import answer_tag, committed_sentence, escape_currency, looks_cut
from dhpo_suite.grading.tidy import (
    TURN_TOKEN_RE,
    drop_pleasantries,
    strip_invisible,
    strip_special_tokens,
)

__all__ = ["RULE_SOURCE", "extract_answer", "extract_final", "extract_rule", "final_box_group"]

RULE_SOURCE = {"box": "boxed", "boxes": "boxed", "answer line": "marker", "A: line": "marker",
               "#### line": "marker", "json answer": "marker", "answer tag": "marker", "bold": "marker",
               "fallback": "fallback"}
"""Each rule's `answer_source` (the coarse kind a reward policy reads: boxed, marker or fallback)."""

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\b")
_NEXT_PROBLEM_RE = re.compile(  # `Problem:`, `**Problem 2:**`, `Subproblem 1:`, `## Question 3:`, `Exercise:`
    r"\n\s*(?:#+\s*|\*\*)?(?:(?:Sub-?problem|Problem|Question|Exercise)(?:\s*\d+)?\s*\**\s*[:.]|Q\s*\d*\s*:)",
    re.IGNORECASE)
_CHAT_TURN_RE = re.compile(r"\n\s*(?:User|Human|Assistant|USER|HUMAN|ASSISTANT)\s*:|" + TURN_TOKEN_RE.pattern)
_ECHO_HEADER_RE = re.compile(r"\s*(?:[#*]+\s*)?(?:Preamble|Problem|Question)\s*\d*\s*\**\s*:", re.IGNORECASE)
_BOLD_RE = re.compile(r"\*\*([^*\n]{1,120}?)\*\*")
_VALUE_RE = re.compile(r"\d|\$|\\\(|\\infty|\\pi|\\sqrt|[\u221e\u03c0\u221a]|^\(?[A-E]\)")
_LIST_GAP_RE = re.compile(  # between boxes of one list: `}, \boxed`, `}$ and $x = \boxed`, `}$ or $\boxed`
    r"[\s$,\\()]*(?:,|\band\b|\bor\b)[\s$,\\()]*(?:and\b[\s$,\\()]*)?(?:[A-Za-z](?:_\{?\w+\}?)?\s*=[\s$\\(]*)?")
_TUPLE_RE = re.compile(  # a plain-text tuple or interval: `(-1, 6)`, `(5, ∞)`, `[3/5, 8/3]`
    r"[(\[]\s*-?[\w.\\/\u221e\u03c0\u221a]+(?:\s*,\s*[-+]?[\w.\\/\u221e\u03c0\u221a]+)+\s*[)\]]")
_OPERATOR_BEFORE_RE = re.compile(r"(?:[-+*/^\u00d7\u00f7]|\\times|\\cdot|\\div)$")
_OPERATOR_AFTER_RE = re.compile(r"[-+*/^!\u00d7\u00f7]|\\times|\\cdot|\\div|\\frac|[xX]\s*(?:\\\$)?\d")
_STANDALONE_RE = re.compile(  # a number not glued to a word, a fraction bar, an exponent, a subscript or a list
    r"(?<![\w.,^_{}\\/$-])(?:\\\$)?-?(?:[1-9]\d{0,2}(?:,\d{3})+|\d+)(?:\.\d+)?(?:/\d+)?(?:[eE][-+]?\d+)?(?![\w^_/]|[.,]\d|,\s*[-+]?\d)"
)
_MAX_BOX_CANDIDATES = 50  # bounds work on adversarial text made of thousands of unclosed boxes
_MAX_CUTS = 20  # turn or problem headers tried as cut points


def extract_answer(text: str | None, truncated: bool = False) -> str | None:
    """The final answer in `text`, or None. See the module docstring for the order of rules."""
    return extract_rule(text, truncated)[0]


def extract_final(text: str | None, truncated: bool = False,
                  problem: str | None = None) -> tuple[str | None, str | None]:
    """(answer, answer_source: "boxed", "marker" or "fallback"); (None, None) when nothing is stated."""
    answer, rule = extract_rule(text, truncated, problem)
    return answer, RULE_SOURCE[rule] if rule else None


def extract_rule(text: str | None, truncated: bool = False,
                 problem: str | None = None) -> tuple[str | None, str | None]:
    """(answer, rule) with rule one of `RULE_SOURCE`; (None, None) when nothing is stated.

    `truncated`: the response was stopped at the token budget; only a box or an answer line written
    before the cut counts. `problem`: the problem text, when known; a restatement of it is no answer."""
    if not text:
        return None, None
    text = strip_invisible(text)
    text = drop_pleasantries(escape_currency(strip_special_tokens(_cut_invented(text, problem))))
    boxes = _final_boxes(text)
    phrase = after_phrase(text, lambda rest: _committed_answer(rest, None))
    if boxes and not (phrase is not None and phrase.start > boxes[-1][1] and phrase.states):
        return _box_answer(text, boxes)
    if phrase is not None and phrase.answer:  # also when it states a value after the last box
        return phrase.answer, phrase.rule
    tag = answer_tag(text)
    if tag is not None:  # `<answer> ... </answer>`: an answer region, whose last statement is read
        answer = _committed_answer(tag, None) or _fallback(tag, len(tag))  # the tag itself commits
        return (answer, "answer tag") if answer else (None, None)
    if truncated or looks_cut(text):
        return None, None
    bold = _bold_answer(text)
    if bold:
        return bold, "bold"
    answer = _committed_answer(text, problem)
    return (answer, "fallback") if answer else (None, None)


def _committed_answer(text: str, problem: str | None) -> str | None:
    committed = committed_sentence(text, problem)
    return _fallback(*committed) if committed else None


def _cut_invented(text: str, problem: str | None) -> str:
    """The response up to an invented chat turn or a made-up next problem, but only where the text before
    the cut states an answer of its own: a base model answers and goes on with "Problem: ..." or "User:";
    a response that first echoes its prompt and then answers after "Assistant:" keeps its answer."""
    for pattern in (_CHAT_TURN_RE, _NEXT_PROBLEM_RE):
        for number, cut in enumerate(pattern.finditer(text)):
            if number >= _MAX_CUTS:
                break
            if cut.start() > 0 and _states_answer(text[: cut.start()], problem):
                text = text[: cut.start()]
                break
    return text


def _states_answer(prefix: str, problem: str | None) -> bool:
    """Does `prefix` state an answer of its own: a box, an answer line, or a committed sentence, outside
    the lines it copies from the problem? A prefix that opens with a problem header ("Preamble:",
    "Problem:") is a restatement, and only a box or an answer line counts in it."""
    prefix = strip_special_tokens(prefix)
    if problem:
        squashed = re.sub(r"\s+", " ", problem)
        prefix = "\n".join(line for line in prefix.splitlines()
                           if len(line.strip()) < 25 or re.sub(r"\s+", " ", line.strip()) not in squashed)
    if not prefix.strip():
        return False
    if _final_boxes(prefix) or after_phrase(prefix, lambda rest: None) is not None:
        return True
    return not _ECHO_HEADER_RE.match(prefix) and committed_sentence(prefix, problem) is not None


def _box_answer(text: str, boxes: list[tuple[int, int, str]]) -> tuple[str, str]:
    """The last box, or the boxes written as one list just before it (`\\boxed{1}, \\boxed{2} and
    \\boxed{3}` → `1, 2, 3`): a list is taken whole, never its last element alone."""
    group = [boxes[-1]]
    for box in reversed(boxes[:-1]):
        gap = _BOX_RE.sub("", text[box[1] + 1: group[0][0]])
        if not _LIST_GAP_RE.fullmatch(gap):
            break
        group.insert(0, box)
    if len(group) > 1:
        return ", ".join(content.strip() for _, _, content in group), "boxes"
    return boxes[-1][2].strip(), "box"


def _bold_answer(text: str) -> str | None:
    """The bold value that ends the last paragraph (`The value of *x* is **83**.`, `**(-1, 6)**`), taken
    whole; bold values written as one list (`**x = 2** and **x = -3**`) are taken together. A bold label
    (`**Step 2:**`) is no value, nor is a bold number that more values follow (`given **5** apples, so 3`)."""
    paragraph = text.rstrip()[text.rstrip().rfind("\n\n") + 1:]
    if paragraph.rstrip().endswith("?"):
        return None
    spans = [m for m in _BOLD_RE.finditer(paragraph)
             if not (m.group(1).rstrip().endswith(":") or paragraph[m.end(): m.end() + 1] == ":")]
    if not spans or not _VALUE_RE.search(spans[-1].group(1)) or re.search(r"\d|\$|\\\(", paragraph[spans[-1].end():]):
        return None
    group = [spans[-1]]
    for m in reversed(spans[:-1]):
        if not _LIST_GAP_RE.fullmatch(paragraph[m.end(): group[0].start()]):
            break
        group.insert(0, m)
    return ", ".join(_bold_value(m.group(1)) for m in group)


def _bold_value(content: str) -> str:
    value = content.strip().rstrip(".,;").strip()
    math = INLINE_MATH_RE.fullmatch(value)
    return math_content(math) if math else value


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


def _fallback(text: str, after: int = 0) -> str | None:
    """The first math segment (whole), plain tuple (whole) or standalone number that starts at or after
    `after` (the end of the sentence's last connective); without one, the candidate that ends last."""
    found = [(m.start(), m.end(), math_content(m)) for m in INLINE_MATH_RE.finditer(text)]
    masked = INLINE_MATH_RE.sub(lambda m: " " * len(m.group(0)), text)
    found += [(m.start(), m.end(), m.group(0)) for m in _TUPLE_RE.finditer(masked)]
    masked = _TUPLE_RE.sub(lambda m: " " * len(m.group(0)), masked)  # `(-1, 6)` is never the 6 alone
    found += [(m.start(), m.end(), m.group(0)) for m in _STANDALONE_RE.finditer(masked) if not _operand(masked, m)]
    found = [c for c in found if c[2]]
    values = [c for c in found if not masked[:c[0]].endswith("#")]
    found = values or found  # `16 people think that horse #12 will win`: a label's number only when alone
    if not found:
        return None
    later = [c for c in found if c[0] >= after]
    return min(later)[2] if later else max(found, key=lambda c: c[1])[2]


def _operand(text: str, number: re.Match) -> bool:
    """True when the number is an operand (`2 + 3`, `5 \\times 10^3`, `5!`), not a value stated alone."""
    before, after = text[max(0, number.start() - 12) : number.start()].rstrip(), text[number.end() :].lstrip()
    return bool(_OPERATOR_BEFORE_RE.search(before) or _OPERATOR_AFTER_RE.match(after))
