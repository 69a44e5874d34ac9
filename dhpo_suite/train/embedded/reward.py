"""Rewards from the shared grader: 1.0 when the response's final answer matches the gold, else 0.0.

The same `dhpo_suite.grading` grader the evaluator uses (answer extraction + math-verify in sandboxed
worker processes), so a training reward and an evaluation score never disagree.
"""

from __future__ import annotations

import torch

from dhpo_suite.train.embedded.rollout import encode_prompts, sample

__all__ = ["grade_rewards", "heldout_reward"]


def grade_rewards(pool, texts: list[str], golds: list[str], bench: str | None = None) -> tuple[torch.Tensor, list]:
    """(N,) float32 rewards and the N grader verdicts, in order."""
    verdicts = pool.grade_many([(t, g, bench) for t, g in zip(texts, golds)])
    return torch.tensor([1.0 if v.correct else 0.0 for v in verdicts]), verdicts


def heldout_reward(model, tokenizer, task, problems: list[dict], pool, *, max_new_tokens: int,
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
