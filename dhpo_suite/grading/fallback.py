"""The no-marker fallback: an answer from a response without a box or an answer line, only where the
response *commits* to one.

A reward or a benchmark score must never accept a wrong answer, and a response without a marker gives
the grader little to go on. Real failures of a last-number rule (issue 27, each seen in real outputs):
a 60° taken from a cut-off response's restatement of the problem, the `1` of `(1,)` taken from a
Python error message, a fragment of prose taken after a `$$...$$` block. So the fallback answers only
from the response's **last sentence**, and only when

* the response is not cut off: it was not stopped at the token budget (`truncated`), and its text does
  not end mid-sentence (unclosed `\\(`, `\\[`, brace or code fence; a last word such as "and", "the",
  "of"; a trailing operator, comma or colon);
* the sentence is outside code blocks and error messages (fenced blocks, tracebacks and `...Error:`
  lines are removed first);
* the sentence states something: it has a connective ("is", "are", "equals", "=", "gives", "so",
  "total", "has", "costs", "left", "will", ...; the verbs of GSM8K answers) or is a bare number or math
  segment; it is not a question, an instruction ("Find ...",
  "Let ...") or a sentence of the problem itself (when the problem text is known);

and the candidate is then the sentence's last math segment, taken whole, or its last *standalone*
number (see `extract.py`).
"""

from __future__ import annotations

import re

__all__ = ["answer_tag", "committed_sentence", "escape_currency", "looks_cut"]

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
    r"\b(?:is|are|was|were|equals?|gives?|get|gets|got|obtain|obtains|yields?|makes?|made|totals?|answer|result"
    r"|therefore|thus|hence|so|becomes?|has|have|had|costs?|takes?|took|needs?|left|remains?|earns?|pays?|paid"
    r"|spends?|spent|sells?|sold|buys?|bought|will|would|can)\b|=|\\approx|\\le|\\ge|[<>\u2248\u2264\u2265]",
    re.IGNORECASE,
)
_PROMPT_RE = re.compile(
    r"^\W*(?:find|compute|calculate|determine|evaluate|simplify|solve|show|prove|let|suppose|given|assume|"
    r"what|how|which|who|why|express|write|consider|problem|question|subproblem)\b",
    re.IGNORECASE,
)
_BARE_RE = re.compile(r"\W*(?:\x00+|-?[\d.,/]+)\W*")
_PROSE_RE = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")


def escape_currency(text: str) -> str:
    """`$` signs of money written as `\\$` (LaTeX's dollar sign), so they never pair as math delimiters.

    Real GSM8K output: "$5,000 + $125 = $5,125." paired as math `5,000 + ` and then `125 = `, and the
    grader read 125 (a false accept for gold 125). A `$` before a digit is money when the next `$`
    on its line is also before a digit, when none follows on its line, or when the text up to it is
    prose ("$10 / hour + 5 hours x $"); `$5$` and `$2 + 3 = 5$` stay math."""
    if "$" not in text:
        return text
    out, pos = [], 0
    for m in re.finditer(r"(?<![\\$])\$(?=\d)", text):
        if m.start() < pos:
            continue  # inside a math segment already kept
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
        close = text.find("$", m.end(), line_end)
        money = close < 0 or text[close + 1:close + 2].isdigit() or _PROSE_RE.search(
            re.sub(r"\\[A-Za-z]+\s*\{[^{}]*\}", " ", text[m.end():close]))  # `$5 \\text{ apples}$` is math
        if money:
            out.append(text[pos:m.start()] + "\\$")
            pos = m.end()
        else:
            out.append(text[pos:close + 1])
            pos = close + 1
    return "".join(out) + text[pos:]


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


def committed_sentence(text: str, problem: str | None = None) -> tuple[str, int] | None:
    """(the response's last sentence, where its last connective outside math ends) when the sentence
    commits to an answer (module docstring), else None. The answer is the first candidate after that
    connective: "Jean can fill 14 bags with 2 lollipops in each" states 14, not 2."""
    body = _ERROR_LINE_RE.sub(" ", _FENCE_RE.sub("\n", text[-20000:]))
    masked = _MATH_RE.sub(lambda m: "\0" * len(m.group(0)), body)
    end = len(masked.rstrip())
    while end and (masked[end - 1] in ".;, \n\t" or (masked[end - 1] == "!" and not masked[end - 2:end - 1].isalnum())):
        end -= 1  # `5!` keeps its factorial
    if end == 0 or masked[end:].strip().startswith("?") or masked[end - 1] == "?":
        return None
    start = max((m.end() for m in _BOUNDARY_RE.finditer(masked, 0, end)), default=0)
    sentence, shape = body[start:end].strip(), masked[start:end].strip()
    if not sentence or _PROMPT_RE.match(shape):
        return None
    if problem and re.sub(r"\s+", " ", sentence) in re.sub(r"\s+", " ", problem):
        return None  # the response restates the problem and stops
    connectives = list(_CONNECTIVE_RE.finditer(shape))
    if connectives or _BARE_RE.fullmatch(shape) or _math_states(sentence, shape):
        offset = len(body[start:end]) - len(body[start:end].lstrip())
        return sentence, max(0, connectives[-1].end() - offset) if connectives else 0
    return None


def answer_tag(text: str) -> str | None:
    """The content of the last complete `<answer>...</answer>` (the R1-zero format), or None."""
    start = text.rfind("<answer>")
    if start < 0:
        return None
    end = text.find("</answer>", start)
    return text[start + len("<answer>"):end] if end >= 0 else None


def _math_states(sentence: str, shape: str) -> bool:
    """A math segment in the sentence holds a relation (`$2+\\frac53+1=\\frac{14}{3}$`)."""
    return "\0" in shape and bool(re.search(r"=|\\approx|\\[lg]t?e?q?\b|\\neq?|\\in\b|[<>]", sentence))
