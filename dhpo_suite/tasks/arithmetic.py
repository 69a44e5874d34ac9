"""Synthetic verifiable math: multi-step integer arithmetic with `\\boxed{}` answers.

A problem is a left-to-right chain of `n_ops` additions/subtractions (and, at level >= 2, a product of two
small factors as the first step), e.g. ``Compute 17 + 8 - 5.`` with gold ``"20"``. The reference solution
writes one line per step and ends with the answer in ``\\boxed{}``:

    17 + 8 = 25
    25 - 5 = 20
    \\boxed{20}

Problems are a pure function of (seed, split, index), so runs are reproducible. Train and test problems come
from disjoint sets: a problem's canonical text is hashed and the hash's parity decides its split, so no
problem text occurs in both splits whatever the seeds.
"""

from __future__ import annotations

import hashlib
import random
from typing import Callable

__all__ = ["SPLITS", "make_problems", "question_problems", "SYSTEM_PROMPT"]

SPLITS = ("train", "test")
SYSTEM_PROMPT = "Solve the problem step by step. Put the final answer in \\boxed{}."
_MAX_TRIES_PER_PROBLEM = 1000


def _split_of(problem: str) -> str:
    """Deterministic split of a problem text (blake2b parity): disjoint train/test sets."""
    digest = hashlib.blake2b(problem.encode(), digest_size=8).digest()
    return SPLITS[digest[-1] & 1]


def _draw(rng: random.Random, n_ops: int, max_operand: int, level: int) -> tuple[str, list[str], int]:
    """One problem: (problem text, solution step lines, integer answer)."""
    if level >= 2 and rng.random() < 0.5:
        a, b = rng.randint(2, 9), rng.randint(2, 9)
        expr, value, steps = f"{a} * {b}", a * b, [f"{a} * {b} = {a * b}"]
        n_ops -= 1
    else:
        value = rng.randint(0, max_operand)
        expr, steps = str(value), []
    for _ in range(n_ops):
        op, b = rng.choice("+-"), rng.randint(1, max_operand)
        new = value + b if op == "+" else value - b
        steps.append(f"{value} {op} {b} = {new}")
        expr, value = f"{expr} {op} {b}", new
    return f"Compute {expr}.", steps, value


def distinct_draws(n: int, split: str, draw: Callable[[], tuple], too_few: Callable[[int], str]) -> list[tuple]:
    """`n` results of `draw()` whose problem text (their first item) is new and falls in `split`; ValueError with
    `too_few(found)` when `_MAX_TRIES_PER_PROBLEM` draws per problem find fewer."""
    out: list[tuple] = []
    seen: set[str] = set()
    for _ in range(_MAX_TRIES_PER_PROBLEM * max(n, 1)):
        if len(out) == n:
            return out
        got = draw()
        if got[0] not in seen and _split_of(got[0]) == split:
            seen.add(got[0])
            out.append(got)
    if len(out) < n:
        raise ValueError(too_few(len(out)))
    return out


def make_problems(n: int, seed: int = 0, split: str = "train", *, n_ops: int = 2, max_operand: int = 20,
                  level: int = 1) -> list[dict]:
    """`n` distinct problems of `split` ("train" or "test"): dicts with id, problem, answer (str), solution.

    `n_ops`: arithmetic steps per problem (>= 1); `max_operand`: operands are drawn from [1, max_operand];
    `level` 2 lets the first step be a product of two digits.
    """
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")
    if n < 0 or n_ops < 1 or max_operand < 1:
        raise ValueError(f"need n >= 0, n_ops >= 1, max_operand >= 1 (got n={n}, n_ops={n_ops}, "
                         f"max_operand={max_operand})")
    rng = random.Random(f"arithmetic/{seed}/{split}/{n_ops}/{max_operand}/{level}")
    draws = distinct_draws(n, split, lambda: _draw(rng, n_ops, max_operand, level),
                           lambda found: f"only {found} distinct {split} problems exist for n_ops={n_ops}, "
                                         f"max_operand={max_operand}; asked for {n}")
    return [{"id": f"{split}-{seed}-{i}", "problem": problem, "answer": str(answer),
             "solution": "\n".join(steps + [f"\\boxed{{{answer}}}"])}
            for i, (problem, steps, answer) in enumerate(draws)]


def question_problems(n: int, seed: int = 0, split: str = "train", *, max_first: int = 15,
                      max_second: int = 9) -> list[dict]:
    """One-step questions for small pretrained chat models, e.g. ``What is 12 - 7?`` (gold ``"5"``).

    Every ``a + b`` and every ``a - b`` with ``a >= b`` (1 <= a <= `max_first`, 1 <= b <= `max_second`) is
    enumerated, the split's half kept (same hash rule as `make_problems`) and shuffled by `seed`; the first
    `n` are returned, or all of them when the split holds fewer (234 problems in all at the defaults).
    """
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")
    if n < 0 or max_first < 1 or max_second < 1:
        raise ValueError(f"need n >= 0, max_first >= 1, max_second >= 1 (got n={n}, max_first={max_first}, "
                         f"max_second={max_second})")
    pool = [(a, op, b, a + b if op == "+" else a - b) for a in range(1, max_first + 1) for b in range(1, max_second + 1)
            for op in "+-" if (op == "+" or a >= b) and _split_of(f"What is {a} {op} {b}?") == split]
    random.Random(f"question/{seed}/{split}/{max_first}/{max_second}").shuffle(pool)
    return [{"id": f"{split}-{seed}-{i}", "problem": f"What is {a} {op} {b}?", "answer": str(c),
             "solution": f"{a} {op} {b} = {c}\n\\boxed{{{c}}}"} for i, (a, op, b, c) in enumerate(pool[:n])]

