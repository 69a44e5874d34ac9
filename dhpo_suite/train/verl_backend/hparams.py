"""The objective's settings on verl's config tree: one name per setting, one resolution, one table.

Five settings are fields of verl's actor config, which verl users know; on verl that field is their one name
(`VERL_FIELDS`). Every other setting is the objective's own keyword under `actor.policy_loss.hparams`:

    actor_rollout_ref.actor.clip_ratio_high=0.28                   # eps_high: verl's field, its only name
    +actor_rollout_ref.actor.policy_loss.hparams.seq_eps_low=0.1   # any other keyword of the objective

verl's YAML gives its fields values (clip_ratio_low/high 0.2, loss_agg_mode token-mean) whether or not the user
wrote them. `resolve` tells them apart: a field the user set (on the command line, or to a value that is not
verl's YAML default) is the user's; otherwise the objective's paper default (Appendix D) applies and is written
back into verl's field, so verl's printed config shows what the loss uses. Where the user's intent is unknown
(`explicit=None`: a config that never went through the start-up check), a verl default that is not the
paper's is refused instead of trained silently. Writing a verl-field setting as `policy_loss.hparams.<key>`
is refused (one name), as is verl's `clip_ratio_c` (our GRPO's dual clip is `hparams.dual_clip`).

The driver resolves once (startup.py) and marks `policy_loss.resolved`; workers then read verl's fields and
`hparams` as final (`objective_hparams`, cached per config object). A leaf: no verl import.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Mapping

__all__ = ["ACTOR", "HPARAMS_KEY", "VERL_FIELDS", "Resolution", "check_given", "format_value", "hparam_overrides",
           "objective_hparams", "resolve"]

ACTOR = "actor_rollout_ref.actor"
HPARAMS_KEY = f"{ACTOR}.policy_loss.hparams"
"""Where the objective's settings live in verl's config tree (a `+` adds a key verl's YAML lacks)."""
VERL_FIELDS = {
    "eps_low": "clip_ratio_low",
    "eps_high": "clip_ratio_high",
    "tau_pos": "tau_pos",
    "tau_neg": "tau_neg",
    "loss_agg_mode": "loss_agg_mode",
}
"""Objective keyword -> verl's own actor field that carries it (its one name on verl)."""
_VERL_FALLBACK = {"clip_ratio_low": "clip_ratio", "clip_ratio_high": "clip_ratio"}  # as verl's own losses read them
PAPER = "paper default"


def format_value(value: Any) -> str:
    """A Python value as a Hydra override value (bools lower-case, None as null, lists in brackets)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{format_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, str) and any(c in value for c in " ,=[]{}()'\""):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(value)


def hparam_overrides(hparams: Mapping[str, Any]) -> list[str]:
    """Hydra overrides that set `hparams` (keywords of one objective): verl's own field where it has one,
    else `+actor.policy_loss.hparams.<key>`."""
    return [f"{ACTOR}.{VERL_FIELDS[k]}={format_value(v)}" if k in VERL_FIELDS
            else f"+{HPARAMS_KEY}.{k}={format_value(v)}" for k, v in hparams.items()]


@dataclass(frozen=True)
class Resolution:
    """What the loss of objective `objective` uses, where each value came from, what verl's config must show."""

    objective: str
    hparams: dict[str, Any]
    """Every setting of the objective, resolved and checked by the objective library."""
    source: dict[str, str]
    """Setting -> the config key it came from, or "paper default"."""
    verl_writes: dict[str, Any]
    """verl actor field -> value to write so verl's config shows the value the loss uses."""
    algorithm: dict[str, tuple[Any, str]] = dataclass_field(default_factory=dict)
    """verl's settings that change the algorithm around the loss (advantage estimator, group size, rollout
    correction): name -> (value, where it came from); startup.py fills it."""

    def table(self) -> str:
        """The settings the loss uses, one per line (printed once at start-up, and by --dry-run), then verl's
        algorithm settings around it."""
        width = max(len(k) for k in self.hparams)
        rows = [f"  {k:<{width}}  {format_value(v):<22} {self.source[k]}" for k, v in self.hparams.items()]
        width = max([len(k) for k in self.algorithm], default=0)
        around = [f"  {k:<{width}}  {format_value(v):<22} {src}" for k, (v, src) in self.algorithm.items()]
        head = [f"dhpo_suite.{self.objective}: the loss's settings", *rows]
        return "\n".join(head + (["verl's algorithm around it", *around] if around else []))


def _get(node: Any, key: str) -> Any:
    """`node.key` of a DictConfig, a dict or a dataclass; None when absent."""
    if hasattr(node, "get"):
        return node.get(key, None)
    return getattr(node, key, None)  # None for node None


def _given_hparams(policy_loss: Any) -> dict[str, Any]:
    given = {str(k): v for k, v in dict(_get(policy_loss, "hparams") or {}).items()}
    for key in given:
        if key in VERL_FIELDS:
            raise ValueError(f"actor.policy_loss.hparams.{key}: on verl this setting is verl's own field; "
                             f"set actor_rollout_ref.actor.{VERL_FIELDS[key]} instead (one name per setting)")
    return given


def resolve(name: str, actor: Any, explicit: frozenset[str] | None = None,
            verl_defaults: Mapping[str, Any] | None = None) -> Resolution:
    """Every setting of objective `name` from verl's actor config `actor` (module docstring).

    `explicit`: actor fields the user wrote (command line), or None when unknown. `verl_defaults`: verl's YAML
    values of its actor fields (seam.verl_actor_defaults); a field equal to its YAML value and not in `explicit`
    is verl's default, not the user's. Raises ValueError naming the config key.
    """
    from dhpo_suite.train.objectives.registry import default_hparams

    policy_loss = _get(actor, "policy_loss")
    resolved = bool(_get(policy_loss, "resolved"))
    defaults, verl_defaults = default_hparams(name), verl_defaults or {}
    given = _given_hparams(policy_loss)
    source = {k: f"actor.policy_loss.hparams.{k}" for k in given}
    writes: dict[str, Any] = {}
    for key, field in VERL_FIELDS.items():
        if key not in defaults:
            continue
        where = _VERL_FALLBACK.get(field, field) if _get(actor, field) is None else field
        value = _get(actor, where)
        is_verl_default = where in verl_defaults and value == verl_defaults[where]
        if resolved or (explicit is not None and where in explicit) or not is_verl_default:
            given[key], source[key] = value, f"actor.{where}"
        elif explicit is not None or value == defaults[key]:
            source[key] = f"{PAPER} (verl's YAML: {format_value(value)})" if value != defaults[key] else PAPER
            if value != defaults[key]:
                writes[field] = defaults[key]
        else:
            raise ValueError(
                f"actor.{where}={format_value(value)} is verl's YAML default, not dhpo_suite.{name}'s {key}="
                f"{format_value(defaults[key])} (paper, Appendix D): set actor_rollout_ref.actor.{field} explicitly")
    clip_c = _get(actor, "clip_ratio_c")
    if "clip_ratio_c" in verl_defaults and clip_c != verl_defaults["clip_ratio_c"] or (
            explicit is not None and "clip_ratio_c" in explicit):
        hint = "+actor_rollout_ref.actor.policy_loss.hparams.dual_clip" if "dual_clip" in defaults else "nothing"
        raise ValueError(f"actor.clip_ratio_c={format_value(clip_c)}: verl's dual-clip constant is not read by "
                         f"dhpo_suite.{name} (its dual clip: {hint})")
    hparams = _checked(name, given, source)
    for key in hparams:
        source.setdefault(key, PAPER)
    return Resolution(name, hparams, source, writes)


def _checked(name: str, given: dict[str, Any], source: Mapping[str, str]) -> dict[str, Any]:
    """The objective library's resolution; an error is prefixed with the config key of the bad value."""
    from dhpo_suite.train.objectives.registry import HparamError, resolve_hparams

    try:
        return resolve_hparams(name, given)
    except HparamError as e:
        raise ValueError(f"{source.get(e.key, 'actor.policy_loss.hparams')}: {e}") from None


def check_given(name: str, policy_loss: Any) -> None:
    """Check `actor.policy_loss.hparams` alone (DHPOPolicyLossConfig.__post_init__): one line naming the key."""
    given = _given_hparams(policy_loss)
    _checked(name, given, {k: f"actor.policy_loss.hparams.{k}" for k in given})


_CACHE: dict[int, tuple[Any, dict[str, Any]]] = {}


def objective_hparams(name: str, config: Any, loss_agg_mode: str | None = None) -> dict[str, Any]:
    """What the loss of objective `name` uses under verl's actor `config` (resolved once per config object).

    `loss_agg_mode`: the one verl passed to the loss; it must be the resolved one (verl reads the same field).
    """
    from dhpo_suite.train.verl_backend import seam

    cached = _CACHE.get(id(config))
    if cached is None or cached[0] is not config:
        cached = (config, resolve(name, config, None, seam.verl_actor_defaults()).hparams)
        _CACHE[id(config)] = cached
    hparams = cached[1]
    if loss_agg_mode is not None and "loss_agg_mode" in hparams and loss_agg_mode != hparams["loss_agg_mode"]:
        raise ValueError(f"verl passed loss_agg_mode={loss_agg_mode!r} but actor.loss_agg_mode resolves to "
                         f"{hparams['loss_agg_mode']!r}")
    return hparams


def verl_shared_hparams(actor: Any, train_batch_size: int | None = None) -> dict[str, Any]:
    """The run's SHARED_HPARAMS (runs/manifest.py) read from verl's actor config. `train_batch_size` (prompts
    per step) is the trainer's `data.train_batch_size`, which a worker's actor config does not hold: without it
    prompts_per_step and mini_batches are None (a plain verl launch, whose manifest the worker writes)."""
    optim = getattr(actor, "optim", None)
    mini = getattr(actor, "ppo_mini_batch_size", None)
    return {"lr": getattr(optim, "lr", None), "weight_decay": getattr(optim, "weight_decay", None),
            "warmup_steps": getattr(optim, "lr_warmup_steps", None), "max_grad_norm": getattr(actor, "grad_clip", None),
            "group_size": getattr(actor, "rollout_n", None), "ppo_epochs": getattr(actor, "ppo_epochs", None),
            "prompts_per_step": train_batch_size,
            "mini_batches": train_batch_size // mini if train_batch_size and mini else None}
