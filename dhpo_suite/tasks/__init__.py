"""Verifiable training tasks: problems with gold answers, graded by `dhpo_suite.grading`.

A task is data plus a prompt: `TASKS[name]` gives a `Task` whose `make_problems(n, seed, split)` returns
dicts (id, problem, answer[, solution]) and whose `messages(problem)` is the chat to send.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Callable

from dhpo_suite.tasks import arithmetic, word_problems

__all__ = ["TASKS", "Task", "get_task"]


@dataclass(frozen=True)
class Task:
    """A verifiable task: a problem generator, a system prompt and the response budget."""

    name: str
    make_problems: Callable[..., list[dict]] = field(repr=False)
    system_prompt: str | None = None
    max_new_tokens: int = 48
    bench: str | None = None  # grader policy name (None: the default policy)

    def messages(self, problem: dict) -> list[dict]:
        """The chat for one problem: optional system prompt, then the problem as the user turn."""
        system = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        return system + [{"role": "user", "content": problem["problem"]}]


TASKS: dict[str, Task] = {
    # The tiny model's task: 2-step +/- chains of one-digit operands (the SFT warm-start and default run).
    "arithmetic": Task("arithmetic", partial(arithmetic.make_problems, n_ops=2, max_operand=9)),
    # Harder chains (3 steps, a product first half of the time).
    "arithmetic-hard": Task("arithmetic-hard", partial(arithmetic.make_problems, n_ops=3, max_operand=20, level=2),
                            max_new_tokens=64),
    # The diagnostic setting (issue 26): 6-operation +/- chains of one-digit operands, one line per intermediate
    # result (~60-tokens answers: six places where one wrong digit loses the reward), so responses are long enough
    # for token and sequence ratios to part (docs/reproduction/diagnostic-setting.md).
    "arithmetic-chain": Task("arithmetic-chain", partial(arithmetic.make_problems, n_ops=6, max_operand=9),
                             max_new_tokens=96),
    # One-step "What is 12 - 7?" questions: a small pretrained chat model (SmolLM2-135M) solves ~10 % of them
    # at temperature 1.0, enough for group advantages; a pool of 234 problems, about half per split.
    "arithmetic-chat": Task("arithmetic-chat", arithmetic.question_problems, max_new_tokens=48),
    # GSM8K-style one- and two-step word problems for real instruction-tuned models (SmolLM2).
    "word-problems": Task("word-problems", word_problems.make_problems, system_prompt=word_problems.SYSTEM_PROMPT,
                          max_new_tokens=160),
}


def get_task(name: str) -> Task:
    """The task called `name`; the error lists the known ones."""
    if name not in TASKS:
        raise ValueError(f"task: unknown task {name!r}; known tasks: {', '.join(TASKS)}")
    return TASKS[name]
