"""Objectives by name: the registry, input checks, and the callable every backend uses.

    obj = get_objective("dhpo-e")                     # paper defaults (eq. 7 aggregation, Appendix D ε)
    out = obj(log_prob, old_log_prob, advantages, response_mask, entropy=entropy)
    out.loss.backward()
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch

from dhpo_suite.train.objectives.aggregation import AGG_MODES
from dhpo_suite.train.objectives.output import ObjectiveOutput
from dhpo_suite.train.objectives.parts import token_log_ratio

__all__ = ["Inputs", "Objective", "ALIASES", "objective_names", "register_objective", "get_objective"]


@dataclass(frozen=True)
class Inputs:
    """Checked inputs of one call, all (B, T) in a float dtype of at least fp32."""

    log_prob: torch.Tensor
    old_log_prob: torch.Tensor
    adv: torch.Tensor
    mask: torch.Tensor  # bool; tokens with non-finite inputs removed
    entropy: torch.Tensor | None
    log_ratio: torch.Tensor  # clamped log π − log π_old
    nonfinite: torch.Tensor  # scalar int64
    agg: Mapping[str, Any] = field(default_factory=dict)  # global normalisation for `aggregate`


_REGISTRY: dict[str, Callable[..., ObjectiveOutput]] = {}
# Per-hyper-parameter allowed values, checked when an objective is built.
_CHOICES = {
    "loss_agg_mode": AGG_MODES,
    "mixing": ("avg", "entropy"),
    "clip": ("branch", "unified"),
    "entropy_scope": ("sequence", "batch"),
}
# Objectives whose ε_low only truncates a weight (no trust region to keep positive): ε_low >= 1 means no
# lower bound, as in verl's cispo (the paper's Appendix D sets CISPO's ε_low = 10).
NO_LOWER_BOUND_OK = frozenset({"cispo"})
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "dhpo-a": ("dhpo", {"mixing": "avg"}),
    "dhpo-e": ("dhpo", {"mixing": "entropy"}),
}


def register_objective(name: str) -> Callable:
    """Decorator: register `fn(x: Inputs, *, hparam=default, ...) -> ObjectiveOutput` under `name`."""

    def deco(fn: Callable[..., ObjectiveOutput]) -> Callable[..., ObjectiveOutput]:
        _REGISTRY[name] = fn
        return fn

    return deco


def _defaults(fn: Callable) -> dict[str, Any]:
    params = list(inspect.signature(fn).parameters.values())[1:]
    return {p.name: p.default for p in params}


def _check_hparam(name: str, key: str, value: Any, base: str) -> None:
    where = f"objective {name!r}: {key}={value!r}"
    if key in _CHOICES and value not in _CHOICES[key]:
        raise ValueError(f"{where} is not one of {', '.join(_CHOICES[key])}")
    if "eps" in key and not (isinstance(value, (int, float)) and value >= 0):
        raise ValueError(f"{where} must be a number >= 0")
    if key.endswith("eps_low") and value > 1 and base not in NO_LOWER_BOUND_OK:
        raise ValueError(f"{where} must be <= 1: its trust region's lower bound 1-eps_low cannot go below 0 "
                         f"(eps_low >= 1, no lower bound, is for {', '.join(sorted(NO_LOWER_BOUND_OK))} only)")
    if key in ("avg_weight",) and not 0 <= value <= 1:
        raise ValueError(f"{where} must lie in [0, 1]")
    if key in ("tau_pos", "tau_neg", "dual_clip") and value is not None and value <= 0:
        raise ValueError(f"{where} must be > 0")


@dataclass(frozen=True)
class Objective:
    """A registered loss with its hyper-parameters bound. Call it once per micro-batch."""

    name: str
    hparams: Mapping[str, Any]
    fn: Callable[..., ObjectiveOutput] = field(repr=False)

    @property
    def needs_entropy(self) -> bool:
        return self.hparams.get("mixing") == "entropy"

    def __call__(
        self,
        log_prob: torch.Tensor,
        old_log_prob: torch.Tensor,
        advantages: torch.Tensor,
        response_mask: torch.Tensor,
        entropy: torch.Tensor | None = None,
        *,
        dp_size: int = 1,
        batch_num_tokens: float | torch.Tensor | None = None,
        global_batch_size: float | torch.Tensor | None = None,
        loss_scale_factor: float | None = None,
    ) -> ObjectiveOutput:
        """log_prob, old_log_prob, response_mask, entropy: (B, T); advantages: (B,) or (B, T).

        The keyword arguments carry the global batch facts `aggregate` needs under gradient
        accumulation / data parallelism (see aggregation.py); leave them out for a whole batch.
        """
        if self.needs_entropy and entropy is None:
            raise ValueError(f"objective {self.name!r} (mixing=entropy) needs the per-token entropy: pass entropy=")
        agg = dict(
            dp_size=dp_size,
            batch_num_tokens=batch_num_tokens,
            global_batch_size=global_batch_size,
            loss_scale_factor=loss_scale_factor,
        )
        x = prepare_inputs(log_prob, old_log_prob, advantages, response_mask, entropy, agg)
        return self.fn(x, **self.hparams)


def get_objective(name: str, **hparams: Any) -> Objective:
    """Build a registered objective by name with the paper's defaults, overridden by `hparams`."""
    base, preset = ALIASES.get(name, (name, {}))
    if base not in _REGISTRY:
        known = ", ".join(sorted([*_REGISTRY, *ALIASES]))
        raise ValueError(f"unknown objective {name!r}; known objectives: {known}")
    fn = _REGISTRY[base]
    values = _defaults(fn)
    for key, value in {**preset, **hparams}.items():
        if key not in values:
            raise ValueError(f"objective {name!r} has no hyper-parameter {key!r}; it takes: {', '.join(values)}")
        values[key] = value
    for key, value in values.items():
        _check_hparam(name, key, value, base)
    return Objective(name=name, hparams=values, fn=fn)


def objective_names() -> tuple[str, ...]:
    """Every objective name get_objective accepts, aliases included."""
    return tuple(sorted([*_REGISTRY, *ALIASES]))


def _check_tensor(name: str, t: Any, shape: tuple[int, ...] | None, device: torch.device | None) -> None:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if shape is not None and tuple(t.shape) != shape:
        raise ValueError(f"{name} has shape {tuple(t.shape)}, expected {shape}")
    if device is not None and t.device != device:
        raise ValueError(f"{name} is on {t.device}, but log_prob is on {device}")


def prepare_inputs(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    entropy: torch.Tensor | None,
    agg: Mapping[str, Any],
) -> Inputs:
    """Validate shapes, dtypes and devices; drop tokens whose inputs are NaN/inf (counted, not hidden)."""
    _check_tensor("log_prob", log_prob, None, None)
    if log_prob.ndim != 2:
        raise ValueError(f"log_prob must be (B, T), got shape {tuple(log_prob.shape)}")
    if not log_prob.is_floating_point():
        raise TypeError(f"log_prob must be a floating tensor, got {log_prob.dtype}")
    shape, dev = tuple(log_prob.shape), log_prob.device
    _check_tensor("old_log_prob", old_log_prob, shape, dev)
    _check_tensor("response_mask", response_mask, shape, dev)
    _check_tensor("advantages", advantages, None, dev)
    if advantages.ndim == 1 and advantages.shape[0] == shape[0]:
        advantages = advantages.unsqueeze(-1).expand(shape)
    elif tuple(advantages.shape) != shape:
        raise ValueError(f"advantages has shape {tuple(advantages.shape)}, expected ({shape[0]},) or {shape}")
    if entropy is not None:
        _check_tensor("entropy", entropy, shape, dev)
    if response_mask.dtype != torch.bool:
        if not bool(((response_mask == 0) | (response_mask == 1)).all()):
            raise ValueError("response_mask must be boolean-like (only 0 and 1)")
        response_mask = response_mask.bool()
    dtype = torch.promote_types(log_prob.dtype, torch.float32)
    lp, old, adv = log_prob.to(dtype), old_log_prob.to(dtype).detach(), advantages.to(dtype).detach()
    finite = torch.isfinite(lp) & torch.isfinite(old) & torch.isfinite(adv)
    if entropy is not None:
        entropy = entropy.to(dtype).detach()
        finite &= torch.isfinite(entropy)
    nonfinite = (response_mask & ~finite).sum()
    mask = response_mask & finite
    # The common case (everything finite) skips five (B, T) where()s and their backward: a third of the
    # objective's cost on CPU. Otherwise where() keeps NaNs out of the values and gradients of dropped tokens.
    if not bool(finite.all()):
        zero = torch.zeros((), dtype=dtype, device=dev)
        lp, old, adv = torch.where(finite, lp, zero), torch.where(finite, old, zero), torch.where(finite, adv, zero)
        if entropy is not None:
            entropy = torch.where(finite, entropy, zero)
    return Inputs(lp, old, adv, mask, entropy, token_log_ratio(lp, old), nonfinite, agg)
