"""The objective's settings on verl's config tree: one name per setting, the objective's own keyword.

    +actor_rollout_ref.actor.policy_loss.hparams.seq_eps_low=0.1   # any keyword of the objective
    actor_rollout_ref.actor.clip_ratio_low=0.1                      # or verl's own name, where verl has one

`actor.policy_loss.hparams` (a dict of `DHPOPolicyLossConfig`, config.py) takes every keyword of the
objective, the names `get_objective` and `dhpo-suite train --hp` take. Five settings are also fields of
verl's actor config, which verl users know; they are mapped here, once (`VERL_FIELDS`):

    eps_low, eps_high   actor.clip_ratio_low, actor.clip_ratio_high (each falls back to actor.clip_ratio)
    tau_pos, tau_neg    actor.tau_pos, actor.tau_neg
    loss_agg_mode       actor.loss_agg_mode (the `loss_agg_mode` verl passes to the loss)

Resolution (`objective_hparams`): the objective's defaults, then verl's fields, then `policy_loss.hparams`
(it wins), checked once by the objective library (`registry.resolve_hparams`); an error names the config
key it came from. The launcher writes verl's fields for those five (where verl users look in the composed
config) and `policy_loss.hparams.<key>` for the others (`hparam_overrides`).

Older spellings (`policy_loss.mixing`, `.clip`, `.seq_clip_ratio_low/high`, `.avg_weight`, `.entropy_scope`,
`.dual_clip`, before `hparams` existed) are still read so existing scripts run (`LEGACY_KNOBS`, frozen: a
new setting gets none); setting one and its `hparams` key to different values is an error.

A leaf: no verl import; the objective library is imported when a function runs.
"""

from __future__ import annotations

from typing import Any, Mapping

__all__ = ["ACTOR", "HPARAMS_KEY", "LEGACY_KNOBS", "VERL_FIELDS", "check_hparams", "format_value", "hparam_overrides",
           "objective_hparams"]

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
"""Objective keyword -> verl's own actor field that carries it."""
_VERL_FALLBACK = {"clip_ratio_low": "clip_ratio", "clip_ratio_high": "clip_ratio"}
LEGACY_KNOBS = {
    "mixing": "mixing",
    "clip": "clip",
    "seq_clip_ratio_low": "seq_eps_low",
    "seq_clip_ratio_high": "seq_eps_high",
    "avg_weight": "avg_weight",
    "entropy_scope": "entropy_scope",
    "dual_clip": "dual_clip",
}
"""Old `actor.policy_loss.<knob>` -> keyword. Read only, frozen."""


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
    out = []
    for key, value in hparams.items():
        if key in VERL_FIELDS:
            out.append(f"{ACTOR}.{VERL_FIELDS[key]}={format_value(value)}")
        else:
            out.append(f"+{HPARAMS_KEY}.{key}={format_value(value)}")
    return out


def _get(node: Any, key: str) -> Any:
    """`node.key` of a DictConfig, a dict or a dataclass; None when absent."""
    if node is None:
        return None
    if isinstance(node, Mapping) or hasattr(node, "get"):
        return node.get(key, None)
    return getattr(node, key, None)


def _policy_loss_settings(policy_loss: Any) -> dict[str, tuple[str, Any]]:
    """keyword -> (config key it came from, value) from `policy_loss.hparams` and the old knobs."""
    prefix = "actor.policy_loss"
    out: dict[str, tuple[str, Any]] = {}
    for knob, key in LEGACY_KNOBS.items():
        value = _get(policy_loss, knob)
        if value is not None:
            out[key] = (f"{prefix}.{knob}", value)
    for key, value in dict(_get(policy_loss, "hparams") or {}).items():
        key = str(key)
        if key in out and out[key][1] != value:
            raise ValueError(f"{prefix}.hparams.{key}={value!r} contradicts {out[key][0]}={out[key][1]!r}: "
                             f"set it once, as {prefix}.hparams.{key}")
        out[key] = (f"{prefix}.hparams.{key}", value)
    return out


def _resolve(name: str, given: Mapping[str, tuple[str, Any]]) -> dict[str, Any]:
    """The objective library's resolution; an error is prefixed with the config key of the bad value."""
    from dhpo_suite.train.objectives.registry import HparamError, resolve_hparams

    try:
        return resolve_hparams(name, {k: v for k, (_, v) in given.items()})
    except HparamError as e:
        where = given[e.key][0] if e.key in given else "actor.policy_loss.hparams"
        raise ValueError(f"{where}: {e}") from None


def objective_hparams(name: str, config: Any, loss_agg_mode: str | None = None) -> dict[str, Any]:
    """Every setting of objective `name` from verl's actor `config` (module docstring), resolved and checked.

    `loss_agg_mode`: the one verl passed to the loss (default: `config.loss_agg_mode`).
    """
    from dhpo_suite.train.objectives.registry import hparam_names

    accepted = hparam_names(name)
    given: dict[str, tuple[str, Any]] = {}
    for key, verl_field in VERL_FIELDS.items():
        if key not in accepted:
            continue
        value = loss_agg_mode if key == "loss_agg_mode" and loss_agg_mode is not None else _get(config, verl_field)
        source = verl_field
        if value is None and verl_field in _VERL_FALLBACK:
            source = _VERL_FALLBACK[verl_field]
            value = _get(config, source)
        if value is not None:
            given[key] = (f"actor.{source}", value)
    given.update(_policy_loss_settings(_get(config, "policy_loss")))
    return _resolve(name, given)


def check_hparams(name: str, policy_loss: Any) -> None:
    """Check `actor.policy_loss`'s settings for objective `name` (DHPOPolicyLossConfig.__post_init__):
    one clear error naming the config key on a bad one."""
    _resolve(name, _policy_loss_settings(policy_loss))
