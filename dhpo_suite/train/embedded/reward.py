"""Rewards from the shared grader: 1.0 when the response's final answer matches the gold, else 0.0.

The same `dhpo_suite.grading` grader the evaluator uses (answer extraction + math-verify in sandboxed
worker processes), so a training reward and an evaluation score never disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from dhpo_suite.train.embedded.rollout import encode_prompts, sample

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from dhpo_suite.grading import GraderPool, Verdict
    from dhpo_suite.tasks import Task

__all__ = ["grade_rewards", "heldout_reward", "reward_of", "unmarked_share"]


def reward_of(verdict: Verdict, unmarked: float = 1.0) -> float:
    """1.0 for a correct answer, `unmarked` for a correct answer found only by the grader's no-marker
    fallback (answer_source "fallback": no \\boxed{} and no answer line), else 0.0. `unmarked=0`
    pays only answers the policy marked, so it cannot be rewarded for a stray last number."""
    if not verdict.correct:
        return 0.0
    return unmarked if verdict.answer_source == "fallback" else 1.0


def unmarked_share(verdicts: Sequence[Verdict]) -> float:
    """Fraction of verdicts whose answer came from the no-marker fallback (telemetry)."""
    return sum(v.answer_source == "fallback" for v in verdicts) / max(len(verdicts), 1)


def grade_rewards(pool: GraderPool, texts: list[str], golds: list[str], bench: str | None = None, *,
                  unmarked: float = 1.0) -> tuple[torch.Tensor, list[Verdict]]:
    """(N,) float32 rewards (`reward_of` each verdict) and the N grader verdicts, in order."""
    verdicts = pool.grade_many([(t, g, bench) for t, g in zip(texts, golds)])
    return torch.tensor([reward_of(v, unmarked) for v in verdicts]), verdicts


def heldout_reward(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, task: Task,
                   problems: list[dict[str, Any]], pool: GraderPool, *, max_new_tokens: int,
                   temperature: float, seed: int, batch: int = 64) -> float:
    """Mean reward of one sample per held-out problem (same sampling as training, fixed seed)."""
    total = 0.0
    for start in range(0, len(problems), batch):
        chunk = problems[start:start + batch]
        prompts = encode_prompts(tokenizer, [task.messages(p) for p in chunk])
        roll = sample(model, tokenizer, prompts, 1, max_new_tokens, temperature=temperature, seed=seed + start)
        rewards, _ = grade_rewards(pool, roll.texts, [p["answer"] for p in chunk], task.bench)
        total += float(rewards.sum())
    return total / max(len(problems), 1)
