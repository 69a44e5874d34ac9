"""Answer lines: where a response says "the answer is" in one of its dresses (string rules; issue 40).

Recognised, case ignored: "final answer is/:", "the (final|correct|right) answer (in words) is/:", a line
starting "Answer:" or "**Answer:**", a "Final Answer" heading (the value is on the lines after it), GSM8K's
`#### 18` and `A: 18` (capital A at a line start), a JSON `"answer": ...` field, and the same labels in
other languages (`ANSWER_WORDS`: models answer in the prompt's language, e.g. on MGSM; `Ответ: 18`,
`Respuesta: 18`, `答案：18`, `最终答案是 18`, `La réponse est 18`; a bare word with only its number after
it at a line's or sentence's start, `సమాధానం 11.`). Only these exact words make an answer line: a last line
"Step 3: 18" is no answer line for its colon. After a word of a language that writes a decimal comma,
`75,00` is 75 (`DECIMAL_COMMA`). The value:

* a JSON field's value (a string, decoded; a number; a list, whole; an object states nothing);
* on the line: its first math segment, or several (`$2$ and $3$` → `2, 3`); in prose ("The largest $n$ is
  34.") what follows the last "is"/"=" (math before it without a digit outside subscripts is a name);
* a line that holds nothing after the phrase: the committed statement of the lines after it
  ("is: \\n\\n90 + 50 = 140" → 140), else their first line;
* number words ("two hundred fifty dollars") are read as digits (`tidy.number_words`).

"I hope it is correct." and bold markers around the value are cut off.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import NamedTuple

from dhpo_suite.grading.tidy import number_words

__all__ = ["ANSWER_WORDS", "DECIMAL_COMMA", "INLINE_MATH_RE", "PHRASE_RE", "Phrase", "after_phrase", "decimal_commas",
           "language", "math_content"]

# "Answer" outside English, one row per language: (code, words for "answer", words for "final answer",
# "the answer is" forms). Exact words, case ignored, a space is any run of spaces. "Answer" words label a
# line ("Antwort: 18", "**Respuesta:** 18"); "final answer" words also label a heading or follow other
# words on the line ("所以最终答案：18"); the "is" forms stand anywhere ("Por lo tanto, la respuesta es 18").
ANSWER_WORDS: tuple[tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...] = (
    ("es", ("respuesta",), ("respuesta final",),
     ("la respuesta es", "la respuesta final es", "la respuesta es entonces")),
    ("fr", ("réponse", "reponse"), ("réponse finale", "reponse finale"),
     ("la réponse est", "la réponse finale est", "la réponse est donc")),
    ("de", ("antwort",), ("endgültige antwort", "finale antwort"),
     ("die antwort ist", "die endgültige antwort ist", "die antwort lautet", "die endgültige antwort lautet",
      "die antwort ist also", "die antwort lautet also")),
    ("it", ("risposta",), ("risposta finale",), ("la risposta è", "la risposta finale è", "la risposta è quindi")),
    ("pt", ("resposta",), ("resposta final",), ("a resposta é", "a resposta final é", "a resposta é portanto")),
    ("pl", ("odpowiedź", "odpowiedz"), ("ostateczna odpowiedź", "końcowa odpowiedź"), ("odpowiedź to",)),
    ("tr", ("cevap", "yanıt"), ("nihai cevap", "son cevap"), ()),
    ("id/ms", ("jawaban", "jawapan"), ("jawaban akhir", "jawapan akhir"), ("jawabannya adalah", "jawapannya ialah")),
    ("nl", ("antwoord",), ("eindantwoord", "definitief antwoord"), ("het antwoord is",)),
    ("sv/da/no", ("svar", "svaret"), ("slutligt svar", "endelig svar", "endelige svar"),
     ("svaret är", "svaret er")),
    ("cs/sk", ("odpověď", "odpoveď", "odpoved"), ("konečná odpověď",), ()),
    ("ru/uk", ("ответ", "відповідь"), ("окончательный ответ", "итоговый ответ", "остаточна відповідь"),
     ("ответ —", "ответ равен", "відповідь —", "таким образом, ответ:", "итак, ответ:")),
    ("el", ("απάντηση",), ("τελική απάντηση",), ()),
    ("ar", ("الإجابة", "الاجابة", "الجواب"), ("الإجابة النهائية", "الاجابة النهائية"), ()),
    ("hi", ("उत्तर", "जवाब"), ("अंतिम उत्तर",), ()),
    ("bn/te/th/sw", ("উত্তর", "సమాధానం", "คำตอบ", "jibu"), ("চূড়ান্ত উত্তর", "คำตอบสุดท้าย", "jibu la mwisho"),
     ("উত্তর হল", "คำตอบคือ", "jibu ni")),
    ("zh", ("答案", "答"), ("最终答案", "最終答案"), ("最终答案是", "最終答案是", "最终答案为", "答案是", "答案为")),
    ("ja", ("答え", "解答", "回答", "答"), ("最終的な答え", "最終解答"), ("答えは", "最終的な答えは")),
    ("ko", ("답", "정답", "답안"), ("최종 답", "최종 답안", "최종 정답"), ("정답은", "답은", "최종 답은")),
    ("vi", ("đáp án", "đáp số", "câu trả lời", "trả lời"), ("đáp án cuối cùng", "câu trả lời cuối cùng"),
     ("đáp án là", "câu trả lời là")),
)


# Languages of the table that write a decimal comma. Only after an answer word of one of them is `1,5` read as
# 1.5 (`Ответ: 1,5`, `Réponse : 75,00 $`); elsewhere a comma groups thousands (`1,234`) or separates a list.
# The rule, in one place (`decimal_commas`): one or two digits after the comma, the number not inside
# brackets and not one of a comma list (`(1,5)`, `1,5,7`, `1,5, 2,5` keep their commas). Three digits stay as they read
# today: a German `1,500` is 1.5, but models answering in German carry the English thousands over
# (`1,500 €` for 1500; money has no third decimal), so no reading of it is safe.
DECIMAL_COMMA = frozenset({"es", "fr", "de", "it", "pt", "pl", "tr", "id/ms", "nl", "sv/da/no", "cs/sk", "ru/uk",
                           "el", "vi"})
_DECIMAL_COMMA_RE = re.compile(r"(?<![\w.,(\[{])(?<!,\s)(\d+),(\d{1,2})(?![\d,)\]}]|\s*,\s*\d)")


def decimal_commas(text: str) -> str:
    """`75,00 $` → `75.00 $`, `1,5` → `1.5`; `(1,5)`, `1,5,7` and `1,234` unchanged (see `DECIMAL_COMMA`)."""
    return _DECIMAL_COMMA_RE.sub(r"\1.\2", text)


def language(phrase: str) -> str | None:
    """The code of the table row whose longest word the matched phrase holds (`Réponse :` → fr), else None."""
    said = re.sub(r"\s+", " ", phrase.lower())
    found = [(len(w), row[0]) for row in ANSWER_WORDS for column in row[1:] for w in column if w in said]
    return max(found)[1] if found else None


def _words(column: int) -> str:
    """One column of `ANSWER_WORDS` as a regex alternation, longest first (`最终答案` before `答案`)."""
    words = sorted({w for row in ANSWER_WORDS for w in row[column]}, key=len, reverse=True)
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in words)


_COLON = r"[ \t]*[*_]*[ \t]*[:：][*_]*"  # `Antwort:`, `Réponse :` (French), `答案：` (full width), `**Ответ:**`
# a word of an alphabet never starts or ends inside a longer word; CJK is written without spaces
_OWN = r"(?<![A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff])"
_END = r"(?![A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff])"
_LABEL = (rf"(?:^\s*[*_#]*\s*(?:{_words(1)}|{_words(2)}){_COLON}|{_OWN}(?:{_words(2)}){_COLON}"
          rf"|^[ \t]*[#*_]+[ \t]*(?:{_words(2)})[ \t]*[*_:：]*[ \t]*$|{_OWN}(?:{_words(3)}){_END}"
          # the bare word and only a number after it, at a line's or a sentence's start: MGSM's Telugu
          # `... 5+6=11. సమాధానం 11.`, the number ending its sentence at a line's end or the text's; never
          # mid-sentence, never a numbered heading (`Respuesta 1. La ...`, `Antwort 2` over a part's answer)
          rf"|(?:^|(?<=[.!?।] ))[ \t]*(?:{_words(2)}|{_words(1)})[ \t]+"
          r"(?=[-+]?\d+(?:[.,]\d+)*(?:[ \t]*[.।。][ \t]*$|\s*\Z)))")
PHRASE_RE = re.compile(
    r"(?:final\s+answer\s*(?:is|:)|the\s+(?:final\s+|correct\s+|right\s+)?answer\s*(?:\([^()\n]{0,40}\)\s*)?(?:is|:)"
    r"|^\s*[*_#]*\s*(?:final\s+)?answer\s*[*_]*\s*:[*_]*|^[ \t]*[#*_]+[ \t]*final\s+answer[ \t]*[*_:]*[ \t]*$"
    r"|^\s*answer\s*(?=\$|\\\[|\\\()|(?P<hashes>####)|^[ \t]*(?P<gsm>(?-i:A))[ \t]*:(?=[ \t]*\S)"
    rf"|(?P<json>\"answer\"[ \t]*:)|{_LABEL})[ \t]*[:：]?",
    re.IGNORECASE | re.MULTILINE,
)
INLINE_MATH_RE = re.compile(  # `\$` inside math is a dollar sign; `$$...$$` pairs before `$...$`
    r"(?<!\\)\$\$((?:\\.|[^$\\])+)\$\$|(?<!\\)\$((?:\\.|[^$\\])+)(?<!\\)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]"
)
_LIST_GLUE_RE = re.compile(r"\s*(?:,|and|or|,\s*and|,\s*or)?\s*", re.IGNORECASE)
_NAME_RE = re.compile(r"(?:[A-Za-z]{1,3}|\\[A-Za-z]+)(?:_\{?\w+\}?)?(?:\([a-z]\))?")  # n, AB, x_1, f(x)
_BLOCK_RE = re.compile(r"\$\$(.+?)\$\$|\\\[(.+?)\\\]", re.DOTALL)
_HOPE_RE = re.compile(r"\s*I hope it is correct.*$", re.IGNORECASE | re.DOTALL)
_CONNECTIVE_RE = re.compile(r"\s(?:is|are|equals|was|=)\s", re.IGNORECASE)
# a counter and "is" after a number in Chinese, Japanese and Korean (`答えは39個です。`, `정답은 18개입니다.`)
# are no part of the value; only these words go: `18万` (180,000) and `18次方` (a power) keep theirs
_COPULA_RE = re.compile(r"(?<=\d)\s*(?:個|人|本|枚|匹|台|円|冊|歳|つ|ドル|个|元|块|只|张|岁|名"
                        r"|개|명|원|살|마리|권|장|달러)?\s*(?:です|である|だ|입니다|이다|이에요|예요|임)?\s*[.。]?$")
_TAIL_CHARS = 300  # an answer after "the answer is" is short; a paragraph is not an answer


class Phrase(NamedTuple):
    """The last answer line: its value (None: it states nothing, e.g. a JSON object), where the phrase
    starts, whether the value has a digit or math, and the rule's name."""

    answer: str | None
    start: int
    states: bool
    rule: str


def after_phrase(text: str, committed: Callable[[str], str | None]) -> Phrase | None:
    """The last answer line of `text`, or None. `committed(text)`: the fallback's reading of a text (used
    for the lines after an empty answer line)."""
    last = max(PHRASE_RE.finditer(text), key=re.Match.start, default=None)
    if last is None:
        return None
    rule = ("json answer" if last.group("json") else "#### line" if last.group("hashes")
            else "A: line" if last.group("gsm") else "answer line")
    if rule == "json answer":
        answer = _json_value(text[last.end(): last.end() + 2000])
        return Phrase(answer, last.start(), bool(answer and re.search(r"\d|\\", answer)), rule)
    tail = text[last.end(): last.end() + 2000]
    tail = decimal_commas(tail) if language(last.group(0)) in DECIMAL_COMMA else tail
    window = _HOPE_RE.sub("", tail[:_TAIL_CHARS])
    if not window.split("\n", 1)[0].strip(" \t*_:"):  # the value is on the lines after the phrase
        after = committed(_HOPE_RE.sub("", tail).strip())
        if after:
            return Phrase(after, last.start(), True, rule)
    answer, math = _line_value(window.strip())
    if not answer:
        return None
    if not math and re.search(r"\d", answer) and re.search(r"[A-Za-z]{3}", answer):
        answer = committed(answer) or answer  # "Answer: Tony has won a total of $300" states 300
    words = None if math or re.search(r"\d", answer) else number_words(answer)
    if words:
        return Phrase(words, last.start(), True, rule)
    return Phrase(answer, last.start(), bool(math) or bool(re.search(r"\d", answer)), rule)


def _line_value(window: str) -> tuple[str, bool]:
    """(the value an answer line states, whether it is math)."""
    line = window.split("\n", 1)[0].strip()
    block = _BLOCK_RE.match(window)  # `\[ ... \]` / `$$ ... $$` may span lines
    if block:
        line = block.group(0).replace("\n", " ")
    line = _after_connective(line)
    math = INLINE_MATH_RE.search(line)
    answer = math_content(math) if math else line
    segments = list(INLINE_MATH_RE.finditer(line))
    if len(segments) > 1 and all(_LIST_GLUE_RE.fullmatch(line[a.end(): b.start()])
                                 for a, b in zip(segments, segments[1:])):
        answer = ", ".join(math_content(m) for m in segments)  # `$2$ and $3$`: both are the answer
    answer = _COPULA_RE.sub("", answer)
    answer = re.sub(r"^[\s*_]+|[.;:,\s*_。．，；：।]+$", "", answer)  # `5!` keeps its factorial
    return answer, bool(math)


def _json_value(tail: str) -> str | None:
    """The value of a JSON field written after `"answer":` (None for an object or nothing readable)."""
    tail = tail.lstrip()
    if tail.startswith('"'):
        m = re.match(r'"((?:[^"\\\n]|\\.)*)"', tail)
        # `\\frac` is JSON for `\frac`; models also write `\frac` and `\(` unescaped, which json.loads
        # would refuse or turn into a form feed: only `\\` and `\"` are unescaped
        return re.sub(r'\\([\\"])', r"\1", m.group(1)).strip() or None if m else None
    if tail.startswith("["):
        end = tail.find("]")
        if not 0 < end < 500 or "{" in tail[:end]:
            return None
        try:
            items = json.loads(tail[: end + 1])
        except ValueError:
            return tail[: end + 1]
        return ", ".join(str(item) for item in items) if all(isinstance(i, str) for i in items) else tail[: end + 1]
    m = re.match(r"[^\s,}\]{\[][^,}\n]*", tail)
    return m.group(0).strip() if m else None


def math_content(match: re.Match) -> str:
    return next(g for g in match.groups() if g is not None).strip()


def _after_connective(line: str) -> str:
    """`The largest $n$ is 34.` → `34.`: an answer line in prose states its value after "is"."""
    outside = INLINE_MATH_RE.sub(lambda m: "\0" * len(m.group(0)), line)  # never split inside math
    cuts = [m.end() for m in _CONNECTIVE_RE.finditer(outside)]
    if not cuts:
        return line
    first = INLINE_MATH_RE.search(line)
    if first and first.start() < cuts[-1] and not is_name(math_content(first)):
        return line  # `$5$, which is less than 7`: the value came first
    tail = line[cuts[-1]:]
    return tail if re.search(r"\d|\$|\\\(", tail) else line


def is_name(math: str) -> bool:
    """A quantity's name, not its value: `n`, `x_1`, `f(x)`, `\\omega_{\\text{ss}}`, `v_{\\max}` (no digit
    outside a subscript)."""
    return bool(_NAME_RE.fullmatch(math)) or not re.search(
        r"\d", re.sub(r"_\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\}|_\w", "", math))
