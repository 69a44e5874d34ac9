"""The policy update: PPO mini-batch epochs over one step's rollout with an objective from the library.

Per optimizer step (one mini-batch of whole responses):
    log π, H  = response_logprobs(model, ..., T)         (B, T), chunked log-softmax at the rollout's temperature
    out       = objective(log π, log π_old, Â, mask, entropy=H)   (the library's loss; nothing re-implemented)
    out.loss.backward()   (per micro-batch: gradients accumulate, the loss normalised by the mini-batch)
    clip_grad_norm_(max_grad_norm); AdamW step; scheduler step
A non-finite loss or gradient norm raises NonFiniteUpdate before the optimizer steps (the loop stops the run).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ContextManager, Protocol

import torch

from dhpo_suite.train.embedded.logprobs import response_logprobs
from dhpo_suite.train.embedded.rollout import Rollout

if TYPE_CHECKING:
    from transformers import PreTrainedModel

    from dhpo_suite.train.objectives import Objective, ObjectiveOutput

__all__ = ["NonFiniteUpdate", "StepBatch", "UpdateTelemetry", "old_logprobs", "ppo_update"]


class UpdateTelemetry(Protocol):
    """What receives each micro-batch's objective output (a TelemetryAccumulator, or the loop's timed one)."""

    def add_update(self, output: ObjectiveOutput, *, response_ids: torch.Tensor, token_ids: torch.Tensor,
                   old_log_prob: torch.Tensor, epoch: int) -> None: ...


class NonFiniteUpdate(ArithmeticError):
    """A loss or gradient norm that is NaN or infinite: the update stops before any weight changes."""


@dataclass(frozen=True)
class StepBatch:
    """A step's training data: the rollout, its old log-probs (N, T) and advantages (N,)."""

    rollout: Rollout
    old_log_prob: torch.Tensor
    advantages: torch.Tensor


@torch.no_grad()
def old_logprobs(model: PreTrainedModel, rollout: Rollout, chunk_tokens: int, batch: int = 64) -> torch.Tensor:
    """log π_old of every response token, (N, T), computed once before the update (eval mode, no grad), at the
    rollout's sampling temperature: the sampler's own log-probs."""
    was_training = model.training
    model.eval()
    parts = [response_logprobs(model, rollout.input_ids[s:s + batch], rollout.attention_mask[s:s + batch],
                               rollout.prompt_len, chunk_tokens, rollout.temperature)[0]
             for s in range(0, rollout.input_ids.shape[0], batch)]
    model.train(was_training)
    return torch.cat(parts)


def ppo_update(model: PreTrainedModel, optimizer: torch.optim.Optimizer,
               scheduler: torch.optim.lr_scheduler.LRScheduler, batch: StepBatch, objective: Objective, *,
               epochs: int, mini_batches: int, max_grad_norm: float, chunk_tokens: int, generator: torch.Generator,
               telemetry: UpdateTelemetry | None = None,
               micro_batch: int | None = None,
               forward_context: Callable[[], ContextManager[None]] = contextlib.nullcontext) -> list[float]:
    """Run `epochs` passes of `mini_batches` optimizer steps; returns the pre-clip gradient norms.

    Responses are shuffled each epoch (seeded `generator`); each mini-batch is trimmed to its longest
    response so padding costs nothing. `micro_batch` (responses per forward/backward; None: the whole
    mini-batch) bounds activation memory: gradients accumulate over the micro-batches, each given the
    mini-batch's token and response counts so that their losses sum to the mini-batch's loss
    (objectives/aggregation.py). `telemetry` (a TelemetryAccumulator) receives every micro-batch.
    `forward_context()`: what the model's forward runs in (device.Compute.autocast for bf16); the objective,
    its loss and the backward run outside it, in fp32.
    """
    roll = batch.rollout
    n = roll.input_ids.shape[0]
    grad_norms = []
    model.train()
    for epoch in range(epochs):
        order = torch.randperm(n, generator=generator)
        for idx in order.chunk(mini_batches):
            idx = idx.sort().values.to(roll.input_ids.device)  # the shuffle's generator is the CPU's
            mask = roll.response_mask[idx]
            optimizer.zero_grad(set_to_none=True)
            parts = idx.split(micro_batch) if micro_batch else (idx,)
            totals = {} if len(parts) == 1 else _totals(mask)
            for part in parts:
                _forward_backward(model, objective, batch, part, epoch, totals, chunk_tokens, telemetry,
                                  forward_context)
            norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
            if not torch.isfinite(norm):  # before AdamW's step: its moments, and the weights, stay as they were
                raise NonFiniteUpdate(f"the gradient norm is {float(norm)} (epoch {epoch + 1})")
            optimizer.step()
            grad_norms.append(float(norm))
    scheduler.step()
    return grad_norms


def _totals(mask: torch.Tensor) -> dict[str, Any]:
    """A mini-batch's global facts for `aggregate` (valid tokens, non-empty responses, width for -norm)."""
    counts = mask.sum(-1)
    return dict(batch_num_tokens=counts.sum().clamp(min=1), global_batch_size=(counts > 0).sum().clamp(min=1),
                loss_scale_factor=float(max(int(counts.max()), 1)))


def _forward_backward(model: PreTrainedModel, objective: Objective, batch: StepBatch, idx: torch.Tensor, epoch: int,
                      totals: dict[str, Any], chunk_tokens: int, telemetry: UpdateTelemetry | None,
                      forward_context: Callable[[], ContextManager[None]]) -> None:
    """Loss of responses `idx` (trimmed to their longest), backward into the accumulated gradients."""
    roll, P = batch.rollout, batch.rollout.prompt_len
    mask = roll.response_mask[idx]
    width = max(int(mask.sum(-1).max()), 1)
    ids = roll.input_ids[idx, :P + width]
    att = roll.attention_mask[idx, :P + width]
    with forward_context():
        log_prob, entropy = response_logprobs(model, ids, att, P, chunk_tokens, roll.temperature)
    old = batch.old_log_prob[idx, :width]
    out = objective(log_prob, old, batch.advantages[idx], mask[:, :width], entropy=entropy, **totals)
    if not torch.isfinite(out.loss.detach()).all():  # a NaN loss trains nothing and would poison the weights
        raise NonFiniteUpdate(f"the loss is {float(out.loss.detach())} (epoch {epoch + 1})")
    out.loss.backward()  # outside autocast (its ops replay the forward's dtypes)
    if telemetry is not None:
        telemetry.add_update(out, response_ids=idx, token_ids=ids[:, P:], old_log_prob=old, epoch=epoch)
