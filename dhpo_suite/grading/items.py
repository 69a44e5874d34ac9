"""Grading items: validation of what callers pass to `GraderPool.grade_many` (clear errors, no guessing)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["MAX_RESPONSE_CHARS", "Item", "coerce_items", "golds_of"]

# A response longer than this is graded on its last MAX_RESPONSE_CHARS characters (the answer is at the
# end; the longest real chain of thought seen is ~160k characters). The cut is made here, in the caller,
# so that the worker's clock covers all the work on an item and its memory stays bounded (a 50 MB
# response would otherwise take seconds to send and scan).
MAX_RESPONSE_CHARS = 1_000_000


@dataclass(frozen=True)
class Item:
    """One response to grade against one or more accepted gold answers."""

    response: str
    golds: tuple[str, ...]
    bench: str | None = None
    truncated: bool = False  # stopped at the token budget: graded only on a box or answer line
    problem: str | None = None  # the problem text, when known: a restatement of it is no answer

    def payload(self) -> tuple:
        """What the worker grades: the response (its tail when over MAX_RESPONSE_CHARS) and its length."""
        return (self.response[-MAX_RESPONSE_CHARS:], list(self.golds), self.bench, self.truncated,
                self.problem, len(self.response))


def golds_of(gold, where: str = "gold") -> tuple[str, ...]:
    """A gold string or a non-empty list of gold strings, as a tuple (TypeError names `where`)."""
    if isinstance(gold, str):
        return (gold,)
    if isinstance(gold, (list, tuple)) and gold and all(isinstance(g, str) for g in gold):
        return tuple(gold)
    raise TypeError(f"{where} must be a string or a non-empty list of strings, got {gold!r:.80}")


def coerce_items(items: Iterable) -> list[Item]:
    """Items from (response, gold(s)[, bench]) tuples or dicts with response, gold|answer,
    optional answer_alt, bench, truncated (or finish_reason "length") and problem (or question)."""
    return [_coerce(item, number) for number, item in enumerate(items)]


def _coerce(item, number: int) -> Item:
    where = f"item {number}"
    if isinstance(item, Item):
        return item
    if isinstance(item, Mapping):
        gold = item.get("gold", item.get("answer"))
        if gold is None:
            raise TypeError(f"{where}: needs a 'gold' or 'answer' field")
        golds = golds_of(gold, f"{where}.gold")
        alt = item.get("answer_alt")
        if alt is not None:
            golds += golds_of(alt, f"{where}.answer_alt")
        response, bench = item.get("response"), item.get("bench")
        truncated = item.get("truncated", item.get("finish_reason") == "length")
        problem = item.get("problem", item.get("question"))
        if not isinstance(truncated, bool):
            raise TypeError(f"{where}.truncated must be true or false, got {truncated!r:.40}")
        if problem is not None and not isinstance(problem, str):
            raise TypeError(f"{where}.problem must be a string, got {type(problem).__name__}")
    elif isinstance(item, (tuple, list)) and len(item) in (2, 3):
        response, golds = item[0], golds_of(item[1], f"{where}.gold")
        bench = item[2] if len(item) == 3 else None
        truncated, problem = False, None
    else:
        raise TypeError(f"{where}: expected (response, gold[, bench]) or a dict, got {item!r:.80}")
    if not isinstance(response, str):
        raise TypeError(f"{where}.response must be a string, got {type(response).__name__}")
    if bench is not None and not isinstance(bench, str):
        raise TypeError(f"{where}.bench must be a string or None, got {type(bench).__name__}")
    return Item(response, golds, bench, truncated, problem)
