"""The one adapter between verl's policy-loss call and the objective library.

verl calls `fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config, rollout_is_weights)`
with (B, T) tensors (T = max response length of the micro-batch) and `config` the actor config, whose
`global_batch_info` holds the global normalisers of the current mini-batch (dp_size, batch_num_tokens,
global_batch_size, loss_scale_factor) and must return (loss, metrics). This module maps that call to
`get_objective(name, **hparams)(log_prob, old_log_prob, advantages, response_mask, entropy, **global)`:

    hparam          verl source
    eps_low/high    actor.clip_ratio_low / clip_ratio_high (fallback actor.clip_ratio)
    loss_agg_mode   the loss_agg_mode argument (= actor.loss_agg_mode)
    tau_pos/neg     actor.tau_pos / tau_neg (SAPO)
    others          actor.policy_loss.<knob> (DHPOPolicyLossConfig; None = paper default), KNOB_TO_HPARAM
    entropy         the micro-batch entropy stashed by hooks (needs actor.calculate_entropy=true)

No formula lives here.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from dhpo_suite.train.objectives import ObjectiveOutput, get_objective
from dhpo_suite.train.objectives.registry import ALIASES
from dhpo_suite.train.verl_backend import hooks, rank_telemetry

__all__ = ["KNOB_TO_HPARAM", "objective_hparams", "check_knobs", "make_policy_loss", "loss_metrics"]

KNOB_TO_HPARAM = {
    "mixing": "mixing",
    "clip": "clip",
    "seq_clip_ratio_low": "seq_eps_low",
    "seq_clip_ratio_high": "seq_eps_high",
    "avg_weight": "avg_weight",
    "entropy_scope": "entropy_scope",
    "dual_clip": "dual_clip",
}
_GLOBAL_KEYS = ("dp_size", "batch_num_tokens", "global_batch_size", "loss_scale_factor")


def _knob_hparams(name: str, policy_loss: Any) -> dict[str, Any]:
    """hparams set through actor.policy_loss.<knob>; errors name the field."""
    accepted = get_objective(name).hparams
    alias = ALIASES.get(name, (name, {}))[1]
    out = {}
    for knob, hparam in KNOB_TO_HPARAM.items():
        value = getattr(policy_loss, knob, None)
        if value is None:
            continue
        if hparam not in accepted:
            raise ValueError(f"actor.policy_loss.{knob}={value!r} does not apply to objective {name!r}")
        if hparam in alias and alias[hparam] != value:
            raise ValueError(f"actor.policy_loss.{knob}={value!r} contradicts {name!r} ({hparam}={alias[hparam]!r})")
        out[hparam] = value
    return out


def objective_hparams(name: str, config: Any, loss_agg_mode: str) -> dict[str, Any]:
    """The objective's hyper-parameters from verl's actor config (see the table in the module docstring)."""
    accepted = get_objective(name).hparams
    hp: dict[str, Any] = {}
    if "eps_low" in accepted:
        clip = config.get("clip_ratio", None)
        low, high = config.get("clip_ratio_low", None), config.get("clip_ratio_high", None)
        hp["eps_low"] = clip if low is None else low
        hp["eps_high"] = clip if high is None else high
    if "tau_pos" in accepted:
        hp["tau_pos"], hp["tau_neg"] = config.tau_pos, config.tau_neg
    hp["loss_agg_mode"] = loss_agg_mode
    hp.update(_knob_hparams(name, config.policy_loss))
    return {k: v for k, v in hp.items() if v is not None}


def check_knobs(name: str, policy_loss: Any) -> None:
    """Validate actor.policy_loss's knobs for `name` by building the objective (clear error on a bad value)."""
    get_objective(name, **_knob_hparams(name, policy_loss))


@functools.lru_cache(maxsize=64)
def _objective(name: str, hparams: tuple):
    return get_objective(name, **dict(hparams))


def loss_metrics(out: ObjectiveOutput) -> dict[str, float]:
    """verl's standard actor metrics from an ObjectiveOutput (clip fraction of the binding branch, KL)."""
    mask = out.response_mask
    n = mask.sum().clamp(min=1)
    bounded = [b for b in out.branches.values() if b.low is not None]
    main = out.branches.get("mixed") or (bounded[0] if bounded else out.branches["token"])
    metrics = {
        "actor/pg_clipfrac": ((main.binding_low | main.binding_high) & mask).sum() / n,
        "actor/pg_clipfrac_lower": (main.binding_low & mask).sum() / n,
        "actor/ppo_kl": -(out.log_ratio * mask).sum() / n,
    }
    if out.mix_weight is not None:
        metrics["actor/dhpo_mix_weight"] = (out.mix_weight * mask).sum() / n
    return {k: float(v) for k, v in metrics.items()}


def _entropy(objective, log_prob):
    """Entropy (B, T) for the objective (required) or for telemetry (best effort), else None."""
    if objective.needs_entropy:
        entropy = hooks.micro_batch_entropy(log_prob)
        if entropy is None:
            raise RuntimeError(
                f"objective {objective.name!r} mixes by entropy but verl computed none: "
                "set actor_rollout_ref.actor.calculate_entropy=true"
            )
        return entropy
    if rank_telemetry.active() and hooks.current_micro_batch() is not None:
        return hooks.micro_batch_entropy(log_prob)
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
        info = config.global_batch_info
        out = objective(
            log_prob,
            old_log_prob,
            advantages,
            response_mask,
            _entropy(objective, log_prob),
            **{k: info.get(k) for k in _GLOBAL_KEYS if info.get(k) is not None},
        )
        rank_telemetry.observe(out, config, hooks.current_micro_batch())
        return out.loss, loss_metrics(out)

    policy_loss.__name__ = policy_loss.__qualname__ = f"dhpo_suite_{name.replace('-', '_')}_policy_loss"
    policy_loss.__doc__ = f"verl policy loss for the dhpo-suite objective {name!r} (see policy_loss.py)."
    return policy_loss
