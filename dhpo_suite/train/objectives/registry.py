"""Objectives by name: the registry, their settings, input checks, and the callable every backend uses.

    obj = get_objective("dhpo-e")                     # paper defaults (eq. 7 aggregation, Appendix D ε)
    out = obj(log_prob, old_log_prob, advantages, response_mask, entropy=entropy)
    out.loss.backward()

An objective's settings are its keyword-only parameters: one name each, on every surface. `resolve_hparams`
is the one place they are resolved (defaults, an alias's fixed settings, the given values) and checked.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import torch

from dhpo_suite.train.objectives.aggregation import AGG_MODES
from dhpo_suite.train.objectives.output import ObjectiveOutput
from dhpo_suite.train.objectives.parts import token_log_ratio

__all__ = ["ALIASES", "HparamError", "Inputs", "Objective", "default_hparams", "get_objective", "hparam_names",
           "objective_names", "parse_hparam", "parse_hparams", "register_objective", "resolve_hparams"]


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
_NEEDS_ENTROPY: dict[str, Callable[[Mapping[str, Any]], bool]] = {}  # declared at registration
# A setting's name means one thing in every objective (docs/objectives.md, "Settings"), so its allowed values
# are declared once, by exact name. A new setting needs an entry only if its type alone does not say enough
# (a `Literal[...]` annotation in the objective's signature declares choices by itself).
_CHOICES: dict[str, tuple[str, ...]] = {
    "loss_agg_mode": AGG_MODES,
    "mixing": ("avg", "entropy"),
    "clip": ("branch", "unified"),
    "entropy_scope": ("sequence", "batch"),
}
# (lowest, highest) allowed, both inclusive; None: unbounded. A trust region's ε_low <= 1 keeps 1-ε_low >= 0.
_BOUNDS: dict[str, tuple[float | None, float | None]] = {
    "eps_low": (0, 1),
    "eps_high": (0, None),
    "seq_eps_low": (0, 1),
    "seq_eps_high": (0, None),
    "avg_weight": (0, 1),
}
_POSITIVE = frozenset({"tau_pos", "tau_neg", "dual_clip"})
# Objectives whose ε_low only truncates a weight (no trust region to keep positive): ε_low >= 1 means no
# lower bound, as in verl's cispo (the paper's Appendix D sets CISPO's ε_low = 10).
NO_LOWER_BOUND_OK = frozenset({"cispo"})
_TRUST_REGION = ("its trust region's lower bound 1-{key} cannot go below 0 (eps_low >= 1, no lower bound, is for "
                 + ", ".join(sorted(NO_LOWER_BOUND_OK)) + " only)")
_WHY_BOUNDED = {"eps_low": _TRUST_REGION, "seq_eps_low": _TRUST_REGION}
ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "dhpo-a": ("dhpo", {"mixing": "avg"}),
    "dhpo-e": ("dhpo", {"mixing": "entropy"}),
}


class HparamError(ValueError):
    """A bad objective setting: one line naming the objective and the key (`.objective`, `.key`)."""

    def __init__(self, objective: str, key: str, message: str):
        self.objective, self.key = objective, key
        super().__init__(message)


def register_objective(name: str, needs_entropy: Callable[[Mapping[str, Any]], bool] | None = None) -> Callable:
    """Decorator: register `fn(x: Inputs, *, hparam=default, ...) -> ObjectiveOutput` under `name`.

    The keyword-only parameters are the objective's settings: their names, types and defaults are the one
    vocabulary of every surface (get_objective, `dhpo-suite train --hp`, verl's `policy_loss.hparams`).
    `needs_entropy(hparams)`: whether the objective, so configured, reads the per-token entropy (backends must
    then compute it; None: never). A name registered twice is refused (the first would be lost silently).
    """

    def deco(fn: Callable[..., ObjectiveOutput]) -> Callable[..., ObjectiveOutput]:
        if name in _REGISTRY or name in ALIASES:
            raise ValueError(f"objective {name!r} is registered already ({_REGISTRY.get(name, fn).__module__})")
        _REGISTRY[name] = fn
        _NEEDS_ENTROPY[name] = needs_entropy or (lambda hparams: False)
        _params.cache_clear()
        _types.cache_clear()
        return fn

    return deco


def _base(name: str) -> tuple[str, dict[str, Any]]:
    """(registered function name, the alias's fixed settings); unknown names list the known."""
    base, fixed = ALIASES.get(name, (name, {}))
    if base not in _REGISTRY:
        raise ValueError(f"unknown objective {name!r}; known objectives: {', '.join(objective_names())}")
    return base, fixed


@functools.lru_cache(maxsize=None)
def _params(base: str) -> dict[str, inspect.Parameter]:
    return {p.name: p for p in inspect.signature(_REGISTRY[base]).parameters.values() if p.kind is p.KEYWORD_ONLY}


@functools.lru_cache(maxsize=None)
def _types(base: str) -> dict[str, Any]:
    """Each setting's annotation, evaluated (the objectives' modules use `from __future__ import annotations`)."""
    hints = typing.get_type_hints(_REGISTRY[base])
    return {k: hints.get(k, Any) for k in _params(base)}


def hparam_names(name: str) -> tuple[str, ...]:
    """Every setting objective `name` takes (its keyword-only parameters), in signature order."""
    return tuple(_params(_base(name)[0]))


def default_hparams(name: str) -> dict[str, Any]:
    """The paper's defaults of objective `name` (an alias's fixed settings included)."""
    base, fixed = _base(name)
    return {**{k: p.default for k, p in _params(base).items()}, **fixed}


def _type_name(tp: Any) -> str:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    if typing.get_origin(tp) is typing.Literal:
        return "one of " + ", ".join(map(str, typing.get_args(tp)))
    if args and len(args) < len(typing.get_args(tp)):  # Optional[X]
        return f"{_type_name(args[0])} or None"
    return {float: "a number", int: "an integer", str: "a string", bool: "true or false"}.get(tp, str(tp))


def _is_instance(value: Any, tp: Any) -> bool:
    if tp is Any:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return value in args
    if origin in (typing.Union, types.UnionType):
        return any(_is_instance(value, a) for a in args)
    if tp is type(None):
        return value is None
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp) if isinstance(tp, type) else True


def _check_value(name: str, base: str, key: str, value: Any, tp: Any) -> None:
    where = f"objective {name!r}: {key}={value!r}"
    if not _is_instance(value, tp):
        raise HparamError(name, key, f"{where} must be {_type_name(tp)}")
    if key in _CHOICES and value not in _CHOICES[key]:
        raise HparamError(name, key, f"{where} is not one of {', '.join(_CHOICES[key])}")
    if value is None or isinstance(value, str):
        return
    if isinstance(value, float) and not math.isfinite(value):  # NaN passes every < and > below
        raise HparamError(name, key, f"{where} must be a finite number")
    low, high = _BOUNDS.get(key, (None, None))
    if low is not None and value < low:
        raise HparamError(name, key, f"{where} must be a number >= {low}")
    if high is not None and value > high:
        if key == "eps_low" and base in NO_LOWER_BOUND_OK:
            return
        why = _WHY_BOUNDED.get(key, "")
        raise HparamError(name, key, f"{where} must be <= {high}{why and ': ' + why.format(key=key)}")
    if key in _POSITIVE and not value > 0:
        raise HparamError(name, key, f"{where} must be > 0")


def resolve_hparams(name: str, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Objective `name`'s settings: its defaults overridden by `given`, every one checked once, here.

    An unknown key, a value of the wrong type (by the objective's annotation) or out of its range, and a
    setting that contradicts an alias (mixing='avg' for 'dhpo-e') are a one-line ValueError naming the key,
    the objective and, for an unknown key, the valid names.
    """
    base, fixed = _base(name)
    values = default_hparams(name)
    for key, value in (given or {}).items():
        if key not in values:
            raise HparamError(name, key, f"objective {name!r} has no hyper-parameter {key!r}; "
                                         f"it takes: {', '.join(values)}")
        if key in fixed and value != fixed[key]:
            raise HparamError(name, key, f"objective {name!r}: {key}={value!r} contradicts the name ({name!r} means "
                             f"{key}={fixed[key]!r}; use {base!r} to choose {key})")
        values[key] = value
    tps = _types(base)
    for key, value in values.items():
        _check_value(name, base, key, value, tps[key])
    return values


def parse_hparam(name: str, key: str, text: str) -> Any:
    """A setting given as text (`--hp eps_low=0.1`) as the value its annotation asks for; ValueError names it."""
    tps = _types(_base(name)[0])
    if key not in tps:
        raise HparamError(name, key, f"objective {name!r} has no hyper-parameter {key!r}; it takes: {', '.join(tps)}")
    tp = tps[key]
    union = typing.get_origin(tp) in (typing.Union, types.UnionType)
    args = typing.get_args(tp) if union else (tp,)
    if text.strip().lower() in ("none", "null") and (tp is Any or type(None) in args):
        return None
    for candidate in [a for a in args if a is not type(None)]:
        if typing.get_origin(candidate) is typing.Literal or candidate in (str, Any):
            return text
        if candidate is bool and text.lower() in ("true", "false"):
            return text.lower() == "true"
        try:
            if candidate in (int, float):
                return candidate(text)
        except ValueError:
            pass
    raise HparamError(name, key, f"objective {name!r}: {key}={text!r} must be {_type_name(tp)}")


def parse_hparams(name: str, pairs: Sequence[str]) -> dict[str, Any]:
    """`["eps_low=0.1", "clip=unified"]` -> {"eps_low": 0.1, "clip": "unified"}, typed by the objective."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise HparamError(name, key or pair, f"{pair!r} is not key=value "
                                                 f"(the objective's settings: {', '.join(hparam_names(name))})")
        if key in out:
            raise HparamError(name, key, f"{key} given twice: {pair!r} and {key}={out[key]!r}")
        out[key] = parse_hparam(name, key, text.strip())
    return out


@dataclass(frozen=True)
class Objective:
    """A registered loss with its hyper-parameters bound. Call it once per micro-batch."""

    name: str
    hparams: Mapping[str, Any]
    fn: Callable[..., ObjectiveOutput] = field(repr=False)

    @property
    def needs_entropy(self) -> bool:
        """Whether this configuration reads the per-token entropy (as its registration declares)."""
        return _NEEDS_ENTROPY[_base(self.name)[0]](self.hparams)

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
        agg = dict(dp_size=dp_size, batch_num_tokens=batch_num_tokens, global_batch_size=global_batch_size,
                   loss_scale_factor=loss_scale_factor)
        x = prepare_inputs(log_prob, old_log_prob, advantages, response_mask, entropy, agg)
        return self.fn(x, **self.hparams)


def get_objective(name: str, **hparams: Any) -> Objective:
    """Build a registered objective by name with the paper's defaults, overridden by `hparams`."""
    values = resolve_hparams(name, hparams)
    return Objective(name=name, hparams=values, fn=_REGISTRY[_base(name)[0]])


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
