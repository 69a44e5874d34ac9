"""Final-answer extraction: pure string scanning in linear time; nothing is parsed or evaluated.

Order (first hit wins):
1. the last *complete* `\\boxed{...}` / `\\fbox{...}` (nested braces matched, `\\{`/`\\}` skipped);
   `\\boxed 5` (no braces) takes the next token;
2. the text after the last "final answer is/:", "the answer is", "Answer:" or "####", up to the end
   of its line (first `$...$` segment if there is one);
3. the last number in the text (SimpleRL/Qwen's `use_last_number` fallback).
An empty box gives None (the model answered nothing).
"""

from __future__ import annotations

import re

__all__ = ["extract_answer", "final_box_group", "final_boxes", "last_boxed"]

_BOX_RE = re.compile(r"\\(?:boxed|fbox)\b")
_PHRASE_RE = re.compile(
    r"(?:final\s+answer\s*(?:is|:)|the\s+answer\s+is|^\s*\**answer\**\s*:|####)\s*:?",
    re.IGNORECASE | re.MULTILINE,
)
_INLINE_MATH_RE = re.compile(  # `\$` inside math is a dollar sign, not a delimiter
    r"(?<!\\)\$\$?((?:\\.|[^$\\])+)(?<!\\)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]"
)
_NUMBER_RE = re.compile(r"-?(?:\d[\d,]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_PHRASE_TAIL_CHARS = 300  # an answer after "the answer is" is short; a paragraph is not an answer
_MAX_BOX_CANDIDATES = 50  # bounds work on adversarial text made of thousands of unclosed boxes


def extract_answer(text: str | None) -> str | None:
    """The final answer in `text`, or None. See the module docstring for the order of rules."""
    if not text:
        return None
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed.strip() or None
    phrase = _after_phrase(text)
    if phrase:
        return phrase
    numbers = [m.group(0) for m in _NUMBER_RE.finditer(text[-20000:])]
    return numbers[-1].rstrip(",") if numbers else None


def last_boxed(text: str) -> str | None:
    """Content of the last complete `\\boxed{}`/`\\fbox{}` in `text` (None when there is none)."""
    boxes = final_boxes(text)
    return boxes[-1][1] if boxes else None


def final_box_group(text: str, span: int = 400) -> list[str]:
    """The last boxes written together (`\\boxed{69} and \\boxed{84}`): complete, not nested in each
    other, each starting within `span` characters of the last one. Boxes further back are
    intermediate results, not part of the final answer."""
    boxes = final_boxes(text)
    if not boxes:
        return []
    last = boxes[-1][0]
    return [content.strip() for start, content in boxes if last - start <= span]


def final_boxes(text: str) -> list[tuple[int, str]]:
    """(start, content) of the last complete, non-nested boxes, in text order (at most 50)."""
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
        else:
            token = re.match(r"[^\s$]+", text[pos : pos + 200])
            if not token:
                continue
            end, content = pos + token.end(), token.group(0)
        if found and end > found[-1][0]:  # an outer box around a later one: keep the inner
            continue
        found.append((start, end, content))
    return [(start, content) for start, _, content in reversed(found)]


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


def _after_phrase(text: str) -> str | None:
    last = None
    for last in _PHRASE_RE.finditer(text):
        pass
    if last is None:
        return None
    tail = text[last.end() : last.end() + _PHRASE_TAIL_CHARS].strip()
    tail = tail.split("\n", 1)[0].strip()
    math = _INLINE_MATH_RE.search(tail)
    if math:
        tail = next(g for g in math.groups() if g is not None)
    tail = tail.strip().strip("*").strip()
    tail = re.sub(r"[.;:!\s]+$", "", tail)
    return tail or None
