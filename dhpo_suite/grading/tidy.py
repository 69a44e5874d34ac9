"""What is cleared from a response before its answer is chosen (string rules, linear time; issue 40).

* invisible characters: zero-width spaces and joiners, bidi marks and embeddings, the BOM and the soft
  hyphen (`\\boxed{4\\u200b}` is 4);
* special tokens of chat templates (`<|im_start|>`, `<|im_end|>`, `<|eot_id|>`, `<|endoftext|>`, `</s>`) are
  removed; a token that opens a new turn (`TURN_TOKEN_RE`) is also a place where `extract.py` may cut;
* closing pleasantries: trailing sentences such as "I hope this helps!", "Let me know if you have any
  questions.", "Good luck!" are dropped, so the sentence before them is the last one;
* number words: "two hundred ninety-four dollars" reads as 294 when an answer line states its value in
  words (`number_words`).
"""

from __future__ import annotations

import re

__all__ = ["SCALES", "TURN_TOKEN_RE", "drop_pleasantries", "number_words", "strip_invisible", "strip_special_tokens"]

_INVISIBLE_RE = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
TURN_TOKEN_RE = re.compile(
    r"<\|im_start\|>(?:\s*(?:user|assistant|system)\b)?|<\|start_header_id\|>\w*(?:<\|end_header_id\|>)?"
    r"|<\|(?:user|assistant|system|User|Assistant)\|>|<｜(?:User|Assistant)｜>|\[INST\]|<start_of_turn>(?:user|model)?"
)
_SPECIAL_TOKEN_RE = re.compile(r"<\|[A-Za-z_]{2,30}\|>|<｜[^｜>]{1,30}｜>|</s>|<s>|<eos>|<end_of_turn>|\[/INST\]")
_PLEASANTRY_RE = re.compile(
    r"(?:^|(?<=[.!?\n]))\s*(?:[*_]*)?(?:I\s+hope\s+(?:this|that|it|my)\b|Hope\s+(?:this|that|it)\s+helps"
    r"|Let\s+me\s+know\b|Feel\s+free\b|If\s+you\s+have\s+any\b|Please\s+let\s+me\s+know\b|Good\s+luck\b"
    r"|Happy\s+(?:learning|studying|calculating)\b|Have\s+a\s+(?:great|nice|good)\b|Thanks?\s+(?:you\s+)?for\b"
    r"|You(?:'re|\s+are)\s+welcome\b|Is\s+there\s+anything\s+else\b)[^\n]*$",
    re.IGNORECASE,
)
_STATES_RE = re.compile(r"\d|\$|\\boxed|\banswer\b", re.IGNORECASE)
_UNITS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
          "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
          "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
          "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_NOT_A_UNIT = {"of", "the", "a", "an", "or", "than", "more", "less", "times", "half", "halves", "quarter",
               "quarters", "third", "thirds", "percent", "point", "over", "minus", "plus", "and"}
SCALES = {"hundred": 100, "thousand": 1000, "million": 10**6, "billion": 10**9}


def strip_invisible(text: str) -> str:
    """The text without zero-width and bidi characters (they change no value and break parsers)."""
    return _INVISIBLE_RE.sub("", text)


def strip_special_tokens(text: str) -> str:
    """The text with every special token removed (where a turn token cuts the response is decided in
    `extract.py`: only after the solution began)."""
    return _SPECIAL_TOKEN_RE.sub(" ", TURN_TOKEN_RE.sub(" ", text))


def drop_pleasantries(text: str) -> str:
    """The text without its closing pleasantries (at most five trailing lines or sentences of them)."""
    for _ in range(5):
        tail = text[-2000:]
        m = _PLEASANTRY_RE.search(tail)
        if not m or not text[: len(text) - len(tail) + m.start()].strip() or _STATES_RE.search(m.group(0)):
            return text  # "Thanks for asking! The answer is 5." keeps its answer
        text = text[: len(text) - len(tail) + m.start()].rstrip()
    return text


def number_words(text: str) -> str | None:
    """The integer a phrase of English number words states ("One hundred and eighty", "seventy-six
    dollars", "one hundred thirty thousand people" → "180", "76", "130000"), or None when the phrase is
    not number words (a unit word or two may follow)."""
    words = re.findall(r"[A-Za-z]+", text.lower().replace("-", " "))
    total, current, seen = 0, 0, 0
    for position, word in enumerate(words):
        if word in _UNITS:
            current += _UNITS[word]
        elif word == "hundred" and seen:
            current = max(current, 1) * 100
        elif word in SCALES and seen:
            total, current = total + max(current, 1) * SCALES[word], 0
        elif word == "and" and seen:
            continue
        elif seen and len(words) - position <= 2 and not _NOT_A_UNIT & set(words[position:]):
            break  # "dollars", "people", "cookies left"
        else:
            return None
        seen += 1
    if not seen or re.search(r"\d", text):
        return None
    return str(total + current)
