"""What the seam reads and calls of verl's objects: the launch's command line and verl's YAML defaults, the
worker's actor config and data-parallel group, verl's step metrics, its checkpoint layouts, its policy-loss
registry and config classes. (The batch's fields: verl_batch.py.)
"""

from __future__ import annotations

import contextlib
import functools
import io
import re
import warnings
from importlib.resources import files
from pathlib import Path
from typing import Any

from dhpo_suite.train.verl_backend.override_syntax import override_keys

__all__ = [
    "command_line_keys", "verl_default", "verl_actor_defaults", "actor_config", "data_parallel_group",
    "writes_outputs", "tokenizer", "global_normalisers", "step_metric", "hf_export", "global_step_of",
    "is_registered", "VERL_POLICY_LOSS_CONFIG", "policy_loss_config_base", "check_config",
]


# ---- the launch: its command line, verl's YAML defaults ----
def command_line_keys() -> frozenset[str] | None:
    """The config keys the user's command line set (Hydra's task overrides) inside verl's `@hydra.main` (a
    launch's driver); None elsewhere."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return None
    return override_keys(HydraConfig.get().overrides.task)


@functools.lru_cache(maxsize=1)
def _verl_trainer_yaml() -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.load(str(files("verl.trainer.config") / "_generated_ppo_trainer.yaml"))


def verl_default(key: str) -> Any:
    """verl's own YAML value of a full `ppo_trainer` key (its generated config), None when absent."""
    from omegaconf import OmegaConf

    return OmegaConf.select(_verl_trainer_yaml(), key, default=None, throw_on_resolution_failure=False)


@functools.lru_cache(maxsize=1)
def verl_actor_defaults() -> dict[str, Any]:
    """verl's own YAML values of its actor fields (trainer/config/actor/actor.yaml): what a launch that did not
    set a field gets. Only plain values (no interpolations)."""
    from omegaconf import OmegaConf

    node = OmegaConf.to_container(OmegaConf.load(str(files("verl.trainer.config") / "actor" / "actor.yaml")))
    assert isinstance(node, dict)
    return {str(k): v for k, v in node.items() if isinstance(v, (int, float, str, bool)) and "${" not in str(v)}

# ---- the actor worker ----
def actor_config(worker: Any) -> Any | None:
    """The actor config (verl's ActorConfig dataclass) the worker's loss is bound to, or None."""
    loss_fn = getattr(worker, "loss_fn", None)
    config = getattr(loss_fn, "keywords", {}).get("config") if loss_fn is not None else None
    return config if config is not None and hasattr(config, "policy_loss") else None


def data_parallel_group(worker: Any) -> Any:
    return worker.engine.get_data_parallel_group()


def writes_outputs(worker: Any) -> bool:
    """True on the ranks verl lets report (under sequence/tensor parallelism only one rank per group)."""
    return bool(worker.engine.is_mp_src_rank_with_outputs())


def tokenizer(config: Any) -> Any | None:
    return getattr(getattr(config, "model_config", None), "tokenizer", None)


def global_normalisers(config: Any) -> dict[str, Any]:
    """The global normalisers of the current mini-batch that verl hands the loss through the actor config
    (dp_size, batch_num_tokens, global_batch_size, loss_scale_factor), those that are set."""
    info = config.global_batch_info
    keys = ("dp_size", "batch_num_tokens", "global_batch_size", "loss_scale_factor")
    return {k: info.get(k) for k in keys if info.get(k) is not None}


def step_metric(output: Any, name: str) -> list[float]:
    """verl's per-micro-batch values of metric `name` in a `train_mini_batch` output (grad_norm, lr)."""
    from verl.utils import tensordict_utils as tu

    metrics = tu.get(output, "metrics") if output is not None else None
    values = (metrics or {}).get(name)
    return [float(v) for v in (values if isinstance(values, list) else [values]) if v is not None]


# ---- checkpoints ----
HF_EXPORT_DIRS = ("huggingface", "model/huggingface")
"""Where verl 0.9.1 writes the HF export of an actor checkpoint: FSDP `<ckpt>/huggingface`, Megatron's
checkpoint layout `<ckpt>/model/huggingface`."""


def hf_export(local_path: str) -> Path | None:
    """verl's HF export of a checkpoint (written when actor.checkpoint.save_contents holds hf_model, in either
    layout of HF_EXPORT_DIRS), or None when it holds no complete model."""
    for sub in HF_EXPORT_DIRS:
        source = Path(local_path) / sub
        if (source / "config.json").exists() and any(source.glob("*.safetensors")):
            return source
    return None


def global_step_of(local_path: str) -> int | None:
    """verl's global step of a checkpoint path (`.../global_step_N/...`), or None."""
    match = re.search(r"global_step_(\d+)", str(local_path))
    return int(match.group(1)) if match else None


# ---- verl's policy-loss registry and config classes ----
def is_registered(mode: str) -> bool:
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY

    return mode in POLICY_LOSS_REGISTRY


VERL_POLICY_LOSS_CONFIG = "verl.workers.config.PolicyLossConfig"
"""The `_target_` verl's YAML gives `actor.policy_loss` (a plain launch's; startup.py swaps in ours)."""


def policy_loss_config_base() -> type:
    """verl's PolicyLossConfig, the class `actor.policy_loss` is built as (we subclass it: config.py)."""
    from verl.workers.config import PolicyLossConfig

    return PolicyLossConfig


def check_config(cfg: Any) -> dict[str, Any]:
    """Check a composed `ppo_trainer` config with verl's own validation and config dataclasses (nothing is
    launched); returns the actor, rollout and algorithm dataclasses."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    # verl prints "checks passed" and warns that GRPO disables the critic; failures raise, with the reason.
    # The caller ran our start-up check already: verl's own validation (`__wrapped__`) only.
    validate_config = getattr(validate_config, "__wrapped__", validate_config)
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    return {name: omega_conf_to_dataclass(section) for name, section in (
        ("actor", cfg.actor_rollout_ref.actor), ("rollout", cfg.actor_rollout_ref.rollout),
        ("algorithm", cfg.algorithm))}
