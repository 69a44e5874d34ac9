"""The one adapter between verl's policy-loss call and the objective library.

verl calls `fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights)`
with (B, T) tensors (T = max response length of the micro-batch) and `config` the actor config, whose
`global_batch_info` holds the global normalisers of the current mini-batch (dp_size, batch_num_tokens,
global_batch_size, loss_scale_factor) and must return (loss, metrics). This module maps that call to
`get_objective(name, **hparams)(log_prob, old_log_prob, advantages, response_mask, entropy, **global)`:

    hparams         every keyword of the objective: actor.policy_loss.hparams.<key>, or verl's own
                    actor.clip_ratio_low/high, tau_pos/neg, loss_agg_mode (hparams.py: `objective_hparams`)
    entropy         the micro-batch entropy stashed by seam's ppo_loss wrapper (needs actor.calculate_entropy=true)

No formula lives here.
"""

from __future__ import annotations

import functools
from typing import Callable

from dhpo_suite.train.objectives import ObjectiveOutput, get_objective
from dhpo_suite.train.telemetry import clip_flags
from dhpo_suite.train.verl_backend import seam
from dhpo_suite.train.verl_backend.hparams import objective_hparams
from dhpo_suite.train.verl_backend.state import STATE

__all__ = ["make_policy_loss", "loss_metrics"]


@functools.lru_cache(maxsize=64)
def _objective(name: str, hparams: tuple):
    return get_objective(name, **dict(hparams))


def loss_metrics(out: ObjectiveOutput) -> dict[str, float]:
    """verl's standard actor metrics from an ObjectiveOutput (clip fraction of the binding branch, KL)."""
    mask = out.response_mask
    n = mask.sum().clamp(min=1)
    bounded = [b for b in out.branches.values() if b.low is not None]
    main = out.branches.get("mixed") or (bounded[0] if bounded else out.branches["token"])
    flags = clip_flags(main, mask)
    metrics = {
        "actor/pg_clipfrac": (flags.binding_low | flags.binding_high).sum() / n,
        "actor/pg_clipfrac_lower": flags.binding_low.sum() / n,
        "actor/ppo_kl": -(out.log_ratio * mask).sum() / n,
    }
    if out.mix_weight is not None:
        metrics["actor/dhpo_mix_weight"] = (out.mix_weight * mask).sum() / n
    return {k: float(v) for k, v in metrics.items()}


def _entropy(objective, log_prob):
    """Entropy (B, T) for the objective (required) or for telemetry (best effort), else None."""
    if objective.needs_entropy:
        entropy = seam.micro_batch_entropy(log_prob)
        if entropy is None:
            raise RuntimeError(
                f"objective {objective.name!r} mixes by entropy but verl computed none: "
                "set actor_rollout_ref.actor.calculate_entropy=true"
            )
        return entropy
    if STATE.step is not None and seam.current_micro_batch() is not None:
        return seam.micro_batch_entropy(log_prob)
    return None


def make_policy_loss(name: str) -> Callable:
    """verl policy-loss function for library objective `name` (registered as dhpo_suite.<name>)."""

    def policy_loss(
        old_log_prob,
        log_prob,
        advantages,
        response_mask,
        loss_agg_mode: str = "token-mean",
        config=None,
        rollout_is_weights=None,
    ):
        if config is None:
            raise ValueError(f"dhpo_suite.{name}: verl passed no actor config")
        if rollout_is_weights is not None:
            raise NotImplementedError(
                f"dhpo_suite.{name}: rollout-correction importance weights are not supported; "
                "disable algorithm.rollout_correction"
            )
        hparams = objective_hparams(name, config, loss_agg_mode)
        objective = _objective(name, tuple(sorted(hparams.items())))
        out = objective(
            log_prob,
            old_log_prob,
            advantages,
            response_mask,
            _entropy(objective, log_prob),
            **seam.global_normalisers(config),
        )
        if STATE.step is not None:  # an actor update with telemetry is running (rank_telemetry.run_step)
            STATE.step.observe(out, seam.current_micro_batch())
        return out.loss, loss_metrics(out)

    policy_loss.__name__ = policy_loss.__qualname__ = f"dhpo_suite_{name.replace('-', '_')}_policy_loss"
    policy_loss.__doc__ = f"verl policy loss for the dhpo-suite objective {name!r} (see policy_loss.py)."
    return policy_loss
