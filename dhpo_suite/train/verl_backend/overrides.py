"""Preset + algorithm -> verl Hydra overrides -> verl's own composed `ppo_trainer` config, checked by verl.

    overrides = hydra_overrides(get_preset("qwen3-4b"), algorithm_settings("dhpo-e"), paths)
    cfg = compose(overrides + user_overrides)       # verl's ppo_trainer.yaml, via hydra.compose
    validate(cfg)                                   # verl's validate_config + its dataclasses

User overrides come last, so anything can still be changed from the command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from dhpo_suite.train.verl_backend.presets import AlgorithmSettings, Preset
from dhpo_suite.train.verl_backend.registration import loss_mode

__all__ = ["Paths", "hydra_overrides", "compose", "validate", "format_value", "REWARD_PATH"]

ACTOR = "actor_rollout_ref.actor"
ROLLOUT = "actor_rollout_ref.rollout"
MODEL = "actor_rollout_ref.model"
REWARD_PATH = "pkg://dhpo_suite.train.verl_backend.reward"
POLICY_LOSS_TARGET = "dhpo_suite.train.verl_backend.config.DHPOPolicyLossConfig"


@dataclass(frozen=True)
class Paths:
    """Where a run reads and writes."""

    train_files: str
    """verl Parquet from `dhpo-suite data prepare`."""
    val_files: str
    """Parquet verl reads at start-up (validation itself is off: `dhpo-suite eval` runs it at 16K)."""
    run_dir: str
    """Run directory (telemetry, checkpoints, manifest); verl's own checkpoints go to run_dir/verl."""
    experiment: str = ""
    """verl experiment name (defaults to the run directory's name)."""


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


def _pairs(prefix: str, values: dict[str, Any]) -> list[str]:
    return [f"{prefix}.{k}={format_value(v)}" for k, v in values.items()]


def algorithm_overrides(algo: AlgorithmSettings, run_dir: str | None, telemetry: dict | None = None) -> list[str]:
    """The actor's loss settings: loss mode, clip ranges, aggregation, entropy, DHPO knobs, run_dir."""
    out = _pairs(ACTOR, {
        "policy_loss._target_": POLICY_LOSS_TARGET,
        "policy_loss.loss_mode": loss_mode(algo.objective),
        "loss_agg_mode": algo.loss_agg_mode,
        "calculate_entropy": algo.needs_entropy,
        "entropy_coeff": 0.0,
        "use_kl_loss": False,
    })
    if algo.clip_ratio_low is not None:
        out += _pairs(ACTOR, {"clip_ratio_low": algo.clip_ratio_low, "clip_ratio_high": algo.clip_ratio_high})
    if algo.tau is not None:
        out += _pairs(ACTOR, {"tau_pos": algo.tau[0], "tau_neg": algo.tau[1]})
    # `+` adds keys verl's YAML does not have; DHPOPolicyLossConfig declares them.
    out += ["+" + o for o in _pairs(f"{ACTOR}.policy_loss", dict(algo.knobs))]
    if run_dir is not None:
        out.append(f"+{ACTOR}.policy_loss.run_dir={format_value(run_dir)}")
    if telemetry is not None:
        out.append(f"+{ACTOR}.policy_loss.telemetry={format_value(telemetry)}")
    return out


def preset_overrides(p: Preset, paths: Paths) -> list[str]:
    """Everything of Appendix D that is not the loss: data, model, optimiser, rollout, trainer."""
    seq = p.max_prompt_length + p.max_response_length
    out = _pairs("algorithm", {"adv_estimator": "grpo", "norm_adv_by_std_in_grpo": True, "use_kl_in_reward": False})
    out += _pairs("data", {
        "train_files": paths.train_files, "val_files": paths.val_files, "train_batch_size": p.prompt_batch,
        "max_prompt_length": p.max_prompt_length, "max_response_length": p.max_response_length,
        "filter_overlong_prompts": True, "truncation": "error", "seed": p.seed,
    })
    out += _pairs(MODEL, {
        "path": p.model, "enable_gradient_checkpointing": p.gradient_checkpointing,
        "use_remove_padding": p.remove_padding, "use_fused_kernels": p.use_fused_kernels,
        "fused_kernel_options.impl_backend": "triton" if p.use_fused_kernels else "torch",
    })
    out += _pairs(ACTOR, {
        "strategy": "fsdp2", "optim.lr": p.lr, "optim.lr_warmup_steps": p.warmup_steps,
        "optim.weight_decay": p.weight_decay, "ppo_mini_batch_size": p.ppo_mini_batch,
        "ppo_micro_batch_size_per_gpu": p.ppo_micro_batch_per_gpu, "use_dynamic_bsz": p.dynamic_batch_size,
        "ppo_max_token_len_per_gpu": max(p.max_tokens_per_gpu, seq), "ppo_epochs": p.ppo_epochs,
        "fsdp_config.param_offload": p.offload, "fsdp_config.optimizer_offload": p.offload,
        "checkpoint.save_contents": ["model", "optimizer", "extra", "hf_model"],
    })
    out += _pairs(ROLLOUT, {
        "name": "vllm", "n": p.responses_per_prompt, "temperature": p.temperature, "top_p": p.top_p,
        "top_k": p.top_k, "tensor_model_parallel_size": p.rollout_tp,
        "gpu_memory_utilization": p.gpu_memory_utilization, "max_model_len": seq,
        "log_prob_micro_batch_size_per_gpu": p.ppo_micro_batch_per_gpu,
        "log_prob_max_token_len_per_gpu": 2 * max(p.max_tokens_per_gpu, seq),
    })
    out += _pairs("reward.custom_reward_function", {"path": REWARD_PATH, "name": "compute_score"})
    out += _pairs("trainer", {
        "nnodes": p.nnodes, "n_gpus_per_node": p.gpus_per_node, "total_epochs": p.total_epochs,
        "total_training_steps": p.total_training_steps, "save_freq": p.save_freq, "test_freq": -1,
        "val_before_train": False, "project_name": "dhpo-suite", "experiment_name": paths.experiment,
        "default_local_dir": f"{paths.run_dir}/verl", "logger": ["console"],
    })
    return out


def hydra_overrides(preset: Preset, algo: AlgorithmSettings, paths: Paths) -> list[str]:
    """All overrides for one run, generated from the two frozen dataclasses. (The launcher adds the
    telemetry's response budget once the config is composed: it follows the user's overrides.)"""
    return preset_overrides(preset, paths) + algorithm_overrides(algo, paths.run_dir, telemetry={})


def compose(overrides: Iterable[str]):
    """verl's `ppo_trainer` config (its own YAML tree) with `overrides`, via hydra.compose."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))


def validate(cfg) -> dict[str, Any]:
    """Check `cfg` with verl's own validation and config classes (no launch); returns the dataclasses.

    verl's validate_config builds the actor dataclass (our DHPOPolicyLossConfig included) and checks
    batch sizes; the rollout and algorithm sections are turned into their dataclasses too.
    """
    import contextlib
    import io
    import warnings

    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    # verl prints "checks passed" and warns that GRPO disables the critic; failures raise, with the reason.
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)
    rollout = omega_conf_to_dataclass(cfg.actor_rollout_ref.rollout)
    algorithm = omega_conf_to_dataclass(cfg.algorithm)
    return {"actor": actor, "rollout": rollout, "algorithm": algorithm}
