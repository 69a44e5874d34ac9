"""Preset + algorithm -> verl Hydra overrides -> verl's own composed `ppo_trainer` config, checked by verl.

    overrides = hydra_overrides(get_preset("qwen3-4b"), algorithm_settings("dhpo-e"), paths)
    cfg = compose(overrides + user_overrides)       # verl's ppo_trainer.yaml, via hydra.compose
    seam.check_config(cfg)                          # verl's validate_config + its dataclasses

User overrides come last, so anything can still be changed from the command line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from dhpo_suite.train.verl_backend.hparams import ACTOR, VERL_FIELDS, format_value, hparam_overrides
from dhpo_suite.train.verl_backend.names import POLICY_LOSS_CONFIG, loss_mode
from dhpo_suite.train.verl_backend.presets import AlgorithmSettings, Preset

__all__ = ["Paths", "hydra_overrides", "length_settings", "compose", "REWARD_PATH"]

ROLLOUT = "actor_rollout_ref.rollout"
MODEL = "actor_rollout_ref.model"
REWARD_PATH = "pkg://dhpo_suite.train.verl_backend.reward"


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


def _pairs(prefix: str, values: dict[str, Any]) -> list[str]:
    return [f"{prefix}.{k}={format_value(v)}" for k, v in values.items()]


def algorithm_overrides(algo: AlgorithmSettings, run_dir: str | None, telemetry: dict | None = None) -> list[str]:
    """The actor's loss: loss mode, entropy, the objective's settings (hparams.py), run_dir, telemetry.

    The settings verl has fields for (clip ranges, SAPO's τ, aggregation) are always written, so the composed
    config shows the values the loss uses where verl users look; the others only where they differ from the
    objective's defaults, as `+actor.policy_loss.hparams.<key>`.
    """
    out = _pairs(ACTOR, {
        "policy_loss._target_": POLICY_LOSS_CONFIG,
        "policy_loss.loss_mode": loss_mode(algo.objective),
        "calculate_entropy": True,  # every objective: entropy/* telemetry (and DHPO-E's weight, eq. 10)
        "entropy_coeff": 0.0,
        "use_kl_loss": False,
    })
    changed = algo.changed()
    out += hparam_overrides({k: v for k, v in algo.hparams if k in VERL_FIELDS or k in changed})
    # `+` adds keys verl's YAML does not have; DHPOPolicyLossConfig declares them.
    if run_dir is not None:
        out.append(f"+{ACTOR}.policy_loss.run_dir={format_value(run_dir)}")
    if telemetry is not None:
        out.append(f"+{ACTOR}.policy_loss.telemetry={format_value(telemetry)}")
    return out


def preset_overrides(p: Preset, paths: Paths) -> list[str]:
    """Everything of Appendix D that is not the loss: data, model, optimiser, rollout, trainer. (The token
    budgets that follow from the lengths are derived after the user's overrides: `length_settings`.)"""
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
        "ppo_epochs": p.ppo_epochs,
        "fsdp_config.param_offload": p.offload, "fsdp_config.optimizer_offload": p.offload,
        "checkpoint.save_contents": ["model", "optimizer", "extra", "hf_model"],
    })
    out += _pairs(ROLLOUT, {
        "name": "vllm", "n": p.responses_per_prompt, "temperature": p.temperature, "top_p": p.top_p,
        "top_k": p.top_k, "tensor_model_parallel_size": p.rollout_tp,
        "gpu_memory_utilization": p.gpu_memory_utilization,
        "log_prob_micro_batch_size_per_gpu": p.ppo_micro_batch_per_gpu,
    })
    out += _pairs("reward.custom_reward_function", {"path": REWARD_PATH, "name": "compute_score"})
    out += _pairs("trainer", {
        "nnodes": p.nnodes, "n_gpus_per_node": p.gpus_per_node, "total_epochs": p.total_epochs,
        "total_training_steps": p.total_training_steps, "save_freq": p.save_freq, "test_freq": -1,
        "val_before_train": False, "project_name": "dhpo-suite", "experiment_name": paths.experiment,
        "default_local_dir": f"{paths.run_dir}/verl", "logger": ["console"],
    })
    return out


def length_settings(p: Preset, prompt: int, response: int) -> dict[str, int]:
    """Token budgets that follow from the prompt and response lengths (as composed, after the user's overrides):
    vLLM's context, and the packed micro-batch budgets (log-prob passes: twice the update's)."""
    seq = prompt + response
    return {
        f"{ROLLOUT}.max_model_len": seq,
        f"{ACTOR}.ppo_max_token_len_per_gpu": max(p.max_tokens_per_gpu, seq),
        f"{ROLLOUT}.log_prob_max_token_len_per_gpu": 2 * max(p.max_tokens_per_gpu, seq),
    }


def hydra_overrides(preset: Preset, algo: AlgorithmSettings, paths: Paths) -> list[str]:
    """All overrides for one run, generated from the two frozen dataclasses. (The launcher adds the
    telemetry's response budget once the config is composed: it follows the user's overrides.)"""
    return preset_overrides(preset, paths) + algorithm_overrides(algo, paths.run_dir, telemetry={})


def compose(overrides: Iterable[str]) -> Any:
    """verl's `ppo_trainer` config (its own YAML tree) with `overrides`, via hydra.compose."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=list(overrides))
