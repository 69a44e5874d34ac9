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

__all__ = ["extract_answer", "last_boxed"]

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
    starts = [m.end() for m in _BOX_RE.finditer(text)]
    if not starts:
        return None
    candidates = starts[-_MAX_BOX_CANDIDATES:]
    closing = _matching_braces(text, candidates[0])
    for start in reversed(candidates):
        pos = start
        while pos < len(text) and text[pos] == " ":
            pos += 1
        if pos < len(text) and text[pos] == "{":
            end = closing.get(pos)
            if end is not None:
                return text[pos + 1 : end]
            continue  # unclosed (truncated) box: try the one before it
        token = re.match(r"[^\s$]+", text[pos : pos + 200])
        if token:
            return token.group(0)
    return None


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
