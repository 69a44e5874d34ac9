"""The no-marker fallback: an answer from a response without a box or an answer line, only where the
response *commits* to one.

A reward or a benchmark score must never accept a wrong answer, and a response without a marker gives
the grader little to go on. Real failures of a last-number rule (issue 27, each seen in real outputs):
a 60° taken from a cut-off response's restatement of the problem, the `1` of `(1,)` taken from a
Python error message, a fragment of prose taken after a `$$...$$` block. So the fallback answers only
from the response's **last sentence**, and only when

* the response is not cut off: it was not stopped at the token budget (`truncated`), and its text does
  not end mid-sentence (unclosed `$`, `\\(`, brace or code fence; a last word such as "and", "the",
  "of"; a trailing operator, comma or colon);
* the sentence is outside code blocks and error messages (fenced blocks, tracebacks and `...Error:`
  lines are removed first);
* the sentence states something: it has a connective ("is", "are", "equals", "=", "gives", "so",
  "total", ...) or is a bare number or math segment; it is not a question, an instruction ("Find ...",
  "Let ...") or a sentence of the problem itself (when the problem text is known);

and the candidate is then the sentence's last math segment, taken whole, or its last *standalone*
number (see `extract.py`).
"""

from __future__ import annotations

import re

__all__ = ["committed_sentence", "looks_cut"]

_FENCE_RE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_ERROR_LINE_RE = re.compile(
    r"^\s*(?:Traceback \(most recent call last\)|File \"[^\"]*\", line \d+|\^+\s*$|>>>|In \[\d+\]:|Out\[\d+\]:"
    r"|[A-Z]\w*(?:Error|Exception|Warning|Interrupt)\b).*$",
    re.MULTILINE,
)
_MATH_RE = re.compile(r"(?<!\\)\$\$(?:\\.|[^$\\])+\$\$|(?<!\\)\$(?:\\.|[^$\\])+(?<!\\)\$|\\\(.+?\\\)|\\\[.+?\\\]",
                      re.DOTALL)
_CUT_WORDS = frozenset(
    "and or but the a an of to is are was were be we so then with for by in into that which this these as at "
    "on from if since because has have had get gets gives equals than its their our his her where when each "
    "per not let while therefore thus hence".split()
)
_BOUNDARY_RE = re.compile(r"[.!?;](?=\s)|\n")
_CONNECTIVE_RE = re.compile(
    r"\b(?:is|are|was|were|equals?|gives?|get|gets|got|obtain|obtains|yields?|makes?|totals?|answer|result"
    r"|therefore|thus|hence|so|becomes?)\b|=|\\approx|\\le|\\ge|[<>\u2248\u2264\u2265]",
    re.IGNORECASE,
)
_PROMPT_RE = re.compile(
    r"^\W*(?:find|compute|calculate|determine|evaluate|simplify|solve|show|prove|let|suppose|given|assume|"
    r"what|how|which|who|why|express|write|consider|problem|question|subproblem)\b",
    re.IGNORECASE,
)
_BARE_RE = re.compile(r"\W*(?:\x00+|-?[\d.,/]+)\W*")


def looks_cut(text: str) -> bool:
    """True when the response ends mid-sentence: an unclosed `\\(`/`\\[`, brace or code fence, or a
    last word/character after which a sentence cannot end. A response stopped at the token budget
    looks like this; one that ended on its own does not. (An odd number of `$` is no sign: `$23` is
    money in a GSM8K answer.)"""
    tail = text.rstrip()
    if not tail:
        return True
    paragraph = tail[tail.rfind("\n\n") + 1:]
    opened = paragraph.count("\\(") + paragraph.count("\\[")
    if tail.count("```") % 2 or opened > paragraph.count("\\)") + paragraph.count("\\]"):
        return True
    if paragraph.count("{") - paragraph.count("\\{") > paragraph.count("}") - paragraph.count("\\}"):
        return True
    if re.search(r"(?:[=+*/^(\[{,:\\]|(?<![-\w])-)$", tail):
        return True
    last = re.search(r"([A-Za-z]+)$", tail)
    return bool(last and last.group(1).lower() in _CUT_WORDS)


def committed_sentence(text: str, problem: str | None = None) -> str | None:
    """The response's last sentence when it commits to an answer (module docstring), else None."""
    body = _ERROR_LINE_RE.sub(" ", _FENCE_RE.sub("\n", text[-20000:]))
    masked = _MATH_RE.sub(lambda m: "\0" * len(m.group(0)), body)
    end = len(masked.rstrip())
    while end and (masked[end - 1] in ".;, \n\t" or (masked[end - 1] == "!" and not masked[end - 2:end - 1].isalnum())):
        end -= 1  # `5!` keeps its factorial
    if end == 0:
        return None
    if masked[end:].strip().startswith("?") or masked[end - 1] == "?":
        return None
    start = max((m.end() for m in _BOUNDARY_RE.finditer(masked, 0, end)), default=0)
    sentence, shape = body[start:end].strip(), masked[start:end].strip()
    if not sentence or _PROMPT_RE.match(shape):
        return None
    if problem and re.sub(r"\s+", " ", sentence) in re.sub(r"\s+", " ", problem):
        return None  # the response restates the problem and stops
    if _CONNECTIVE_RE.search(shape) or _BARE_RE.fullmatch(shape) or _math_states(sentence, shape):
        return sentence
    return None


def _math_states(sentence: str, shape: str) -> bool:
    """A math segment in the sentence holds a relation (`$2+\\frac53+1=\\frac{14}{3}$`)."""
    return "\0" in shape and bool(re.search(r"=|\\approx|\\[lg]t?e?q?\b|\\neq?|\\in\b|[<>]", sentence))


def _unclosed_math(tail: str) -> bool:
    singles = len(re.findall(r"(?<!\\)\$", tail))
    opened = tail.count("\\(") + tail.count("\\[")
    closed = tail.count("\\)") + tail.count("\\]")
    return singles % 2 == 1 or opened > closed
