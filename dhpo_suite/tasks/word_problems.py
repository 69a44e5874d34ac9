"""GSM8K-style word problems from templates: one or two arithmetic steps about everyday quantities.

    Mia has 14 apples. She buys 9 more apples and then gives away 5. How many apples does Mia have now?
    gold "18"

Deterministic for (seed, split); train and test are disjoint by a hash of the problem text (as in
`arithmetic`). Meant for small instruction-tuned models (SmolLM2-135M) asked to reason and answer in
`\\boxed{}`.
"""

from __future__ import annotations

import random

from dhpo_suite.tasks.arithmetic import SPLITS, distinct_draws

__all__ = ["make_problems", "SYSTEM_PROMPT"]

SYSTEM_PROMPT = ("You are a helpful math assistant. Solve the problem step by step, then give the final "
                 "answer as \\boxed{number}.")
_NAMES = ["Mia", "Leo", "Ava", "Noah", "Emma", "Liam", "Zoe", "Omar", "Sara", "Ben", "Nina", "Ravi"]
_ITEMS = ["apples", "pencils", "stickers", "marbles", "books", "cookies", "coins", "shells"]


def _one(rng: random.Random) -> tuple[str, int]:
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    a = rng.randint(5, 30)
    kind = rng.randrange(4)
    if kind == 0:
        b = rng.randint(2, 20)
        return f"{name} has {a} {item}. {name} buys {b} more {item}. How many {item} does {name} have now?", a + b
    if kind == 1:
        b = rng.randint(1, a - 1)
        return f"{name} has {a} {item} and gives away {b} of them. How many {item} are left?", a - b
    if kind == 2:
        b, c = rng.randint(2, 6), rng.randint(2, 9)
        return f"{name} buys {b} bags with {c} {item} in each bag. How many {item} does {name} buy?", b * c
    b, c = rng.randint(2, 20), rng.randint(1, a)
    return (f"{name} has {a} {item}. {name} buys {b} more {item} and then gives away {c}. "
            f"How many {item} does {name} have now?", a + b - c)


def make_problems(n: int, seed: int = 0, split: str = "train") -> list[dict]:
    """`n` distinct problems of `split`: dicts with id, problem, answer (str)."""
    if split not in SPLITS:
        raise ValueError(f"split: expected one of {SPLITS}, got {split!r}")
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    rng = random.Random(f"word-problems/{seed}/{split}")
    draws = distinct_draws(n, split, lambda: _one(rng),
                           lambda found: f"only {found} distinct {split} word problems found; asked for {n}")
    return [{"id": f"{split}-{seed}-{i}", "problem": problem, "answer": str(answer)}
            for i, (problem, answer) in enumerate(draws)]
