"""Exact values of numeric expressions: a small recursive-descent parser over `fractions.Fraction`.

math-verify evaluates `\\frac12+\\frac13` through floats and then compares with a rounding, so
sums of non-dyadic fractions and mixed numbers are judged "different" from their exact gold. Here an
expression made only of numbers is evaluated exactly. Grammar (after `normalize`):

    expr   := term (('+' | '-') term)*
    term   := unary (('*' | '\\cdot' | '\\times' | '/' | implicit) unary)*
    unary  := ('+' | '-') unary | power
    power  := atom ('^' unary)?            integer exponents only, |exponent| <= 64
    atom   := number | '\\frac' group group | '(' expr ')' | '{' expr '}' | '[' expr ']'

A mixed number is an integer directly followed by a fraction (`4\\frac{4}{9}` = 40/9, `-2\\frac12`
= -5/2, and the plain `4 4/9` when it is the whole answer); Math-Verify's own tests read them so, and
MATH golds use them. Anything else (letters, commands other than the above, a comma) gives None, so
this never guesses. Nothing is evaluated but the arithmetic written here.
"""

from __future__ import annotations

import re
from fractions import Fraction

__all__ = ["exact_value"]

MAX_EXPONENT = 64
MAX_CHARS = 300
_TOKEN_RE = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+|\\frac|\\cdot|\\times|[-+*/^(){}\[\]])")
_MIXED_PLAIN_RE = re.compile(r"^([-+]?)(\d+)\s+(\d+)\s*/\s*(\d+)$")


class _Fail(Exception):
    pass


def exact_value(text: str) -> tuple[Fraction, bool] | None:
    """(value, has_decimal) of a numeric expression, or None when `text` is not one.

    `has_decimal` says a decimal literal took part (its value is exact as written, but the writer
    may have rounded it)."""
    if not text or len(text) > MAX_CHARS or re.search(r"[A-Za-z]", re.sub(r"\\(frac|cdot|times)", "", text)):
        return None
    mixed = _MIXED_PLAIN_RE.match(text.strip())
    if mixed:
        sign, whole, num, den = mixed.groups()
        if int(den) == 0:
            return None
        value = int(whole) + Fraction(int(num), int(den))
        return (-value if sign == "-" else value), False
    tokens = _tokenize(text)
    if tokens is None:
        return None
    parser = _Parser(tokens)
    try:
        value = parser.expr()
        if parser.pos != len(tokens):
            return None
    except (_Fail, ZeroDivisionError, OverflowError):
        return None
    return value, any("." in t for t in tokens)


def _tokenize(text: str) -> list[str] | None:
    tokens, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m:
            return None
        tokens.append(m.group(1))
        pos = m.end()  # the pattern's leading `\s*` takes the spaces before the next token
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.pos = tokens, 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            raise _Fail
        self.pos += 1
        return token

    def expr(self) -> Fraction:
        value = self.term()
        while self.peek() in ("+", "-"):
            value = value + self.term() if self.take() == "+" else value - self.term()
        return value

    def term(self) -> Fraction:
        value = self.unary()
        while True:
            token = self.peek()
            if token in ("*", "\\cdot", "\\times", "/"):
                value = value / self.unary() if self.take() == "/" else value * self.unary()
            elif token in ("(", "\\frac"):
                value *= self.power()  # implicit product: 2(3+1), (2)\frac{1}{3}; 2\frac{1}{3} is mixed
            else:
                return value

    def unary(self) -> Fraction:
        if self.peek() in ("-", "+"):
            return -self.unary() if self.take() == "-" else self.unary()
        return self.power()

    def power(self) -> Fraction:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take()
        exponent = self.unary_atom()
        if exponent.denominator != 1 or abs(exponent) > MAX_EXPONENT or (base == 0 and exponent < 0):
            raise _Fail
        return base ** int(exponent)

    def unary_atom(self) -> Fraction:
        if self.peek() in ("-", "+"):
            return -self.atom() if self.take() == "-" else self.atom()
        return self.atom()

    def atom(self) -> Fraction:
        token = self.take()
        if token == "\\frac":
            return self._group() / self._group()
        if token in ("(", "{", "["):
            value = self.expr()
            self.take({"(": ")", "{": "}", "[": "]"}[token])
            return value
        if token[0].isdigit() or token[0] == ".":
            value = Fraction(token)
            if token.isdigit() and self.peek() == "\\frac":  # mixed number: 4\frac{4}{9} = 4 + 4/9
                self.take()
                return value + self._group() / self._group()
            return value
        raise _Fail

    def _group(self) -> Fraction:
        token = self.take()
        if token == "{":
            value = self.expr()
            self.take("}")
            return value
        if token.isdigit() and len(token) == 1:  # \frac12 was normalised already; \frac1{2} was not
            return Fraction(int(token))
        raise _Fail
