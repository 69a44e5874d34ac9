"""Training presets (paper Appendix D) and per-algorithm loss settings, as frozen dataclasses.

A `Preset` holds the model and the optimisation/rollout protocol; an `AlgorithmSettings` holds what
the loss needs: the objective and its settings, by the objective's own keywords (clip ranges,
aggregation, ...). Hydra overrides are generated from both
(overrides.py, hparams.py); nothing is kept by hand beside them. Every setting's default is the objective
library's, which is the paper's (Appendix D), so one number lives in one place. The aggregation is one
setting shared by every algorithm (Appendix D shares all but the clip ranges): every objective's default is
the library's PAPER_AGG_MODE, `seq-mean-token-mean`, the paper's eqs. 3/6/7.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

__all__ = ["Preset", "AlgorithmSettings", "PRESETS", "get_preset", "algorithm_settings"]


@dataclass(frozen=True)
class Preset:
    """One model's training protocol. Defaults are the paper's Appendix D (Qwen3-1.7B-Base)."""

    name: str
    """Preset name used on the command line."""
    model: str
    """Hugging Face hub id or local path of the base model."""
    nnodes: int = 1
    """Nodes of the Ray cluster."""
    gpus_per_node: int = 8
    """GPUs per node."""
    lr: float = 1e-6
    """Actor learning rate (AdamW)."""
    warmup_steps: int = 10
    """Linear learning-rate warm-up steps."""
    weight_decay: float = 0.1
    """AdamW weight decay."""
    prompt_batch: int = 512
    """Prompts per training step (data.train_batch_size)."""
    responses_per_prompt: int = 16
    """Responses sampled per prompt (group size G, rollout.n)."""
    temperature: float = 1.0
    """Rollout sampling temperature."""
    top_p: float = 1.0
    """Rollout nucleus sampling (1.0: off)."""
    top_k: int = -1
    """Rollout top-k (-1: off)."""
    max_prompt_length: int = 1024
    """Prompt tokens (longer prompts are filtered out)."""
    max_response_length: int = 4096
    """Response tokens during training."""
    val_max_response_length: int = 16384
    """Response tokens at validation (done by `dhpo-suite eval` on exported checkpoints)."""
    ppo_mini_batch: int = 256
    """Prompts per PPO mini-batch (one optimizer step)."""
    ppo_micro_batch_per_gpu: int = 16
    """Responses per micro-batch per GPU (verl uses it when dynamic batch size is off)."""
    max_tokens_per_gpu: int = 32768
    """Token budget of a packed micro-batch per GPU under dynamic batch size (log-prob passes: twice this)."""
    ppo_epochs: int = 1
    """Passes over each rollout batch."""
    rollout_tp: int = 1
    """vLLM tensor-parallel size."""
    gpu_memory_utilization: float = 0.6
    """Fraction of GPU memory vLLM may take."""
    total_epochs: int = 1
    """Passes over the training set."""
    total_training_steps: int | None = None
    """Stop after this many steps (None: total_epochs decides)."""
    save_freq: int = 50
    """Save (and export an HF checkpoint to the run directory) every N steps."""
    use_fused_kernels: bool = True
    """Entropy and log-probs without materialising the full logits (verl's fused kernels)."""
    gradient_checkpointing: bool = True
    """Recompute activations in backward."""
    remove_padding: bool = True
    """Pack sequences without padding."""
    dynamic_batch_size: bool = True
    """Pack micro-batches by token count."""
    offload: bool = False
    """FSDP parameter/optimizer offloading to CPU."""
    seed: int = 42
    """Data-loader and rollout seed."""

    def __post_init__(self) -> None:
        for name in _POSITIVE:
            if getattr(self, name) <= 0:
                raise ValueError(f"preset {self.name!r}: {name}={getattr(self, name)!r} must be > 0")
        if self.ppo_mini_batch > self.prompt_batch:
            raise ValueError(f"preset {self.name!r}: ppo_mini_batch {self.ppo_mini_batch} > "
                             f"prompt_batch {self.prompt_batch}")


_POSITIVE = ("nnodes", "gpus_per_node", "lr", "prompt_batch", "responses_per_prompt", "max_prompt_length",
             "max_response_length", "val_max_response_length", "ppo_mini_batch", "ppo_micro_batch_per_gpu",
             "ppo_epochs", "rollout_tp", "gpu_memory_utilization", "total_epochs", "save_freq", "max_tokens_per_gpu")

PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(name="qwen3-1.7b", model="Qwen/Qwen3-1.7B-Base", rollout_tp=1),
        Preset(name="qwen3-4b", model="Qwen/Qwen3-4B-Base", rollout_tp=2),
        Preset(
            name="qwen3-30b-a3b",
            model="Qwen/Qwen3-30B-A3B-Base",
            nnodes=4,
            ppo_mini_batch=32,
            ppo_micro_batch_per_gpu=32,
            rollout_tp=4,
        ),
    )
}


def get_preset(name: str) -> Preset:
    """The preset called `name`; a typo gets the list of presets."""
    if name not in PRESETS:
        near = difflib.get_close_matches(name, PRESETS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"unknown preset {name!r}{hint}; presets: {', '.join(PRESETS)}")
    return PRESETS[name]


@dataclass(frozen=True)
class AlgorithmSettings:
    """What verl's actor needs to run one library objective: its name and its resolved settings."""

    objective: str
    """Library objective name (loss mode dhpo_suite.<objective>)."""
    hparams: tuple[tuple[str, Any], ...]
    """Every setting of the objective, by its own keyword (resolved and checked by the objective library)."""

    def changed(self) -> dict[str, Any]:
        """The settings that differ from the objective's paper defaults."""
        from dhpo_suite.train.objectives.registry import default_hparams

        default = default_hparams(self.objective)
        return {k: v for k, v in self.hparams if v != default[k]}


def algorithm_settings(name: str, **hparams: Any) -> AlgorithmSettings:
    """Settings for objective `name`: the library's (paper) defaults, overridden by `hparams` (the objective's
    keywords). Unknown names list the known; a bad setting names the key, the objective and the valid keys."""
    from dhpo_suite.train.objectives import get_objective

    objective = get_objective(name, **hparams)  # resolves and checks, once
    return AlgorithmSettings(objective=name, hparams=tuple(objective.hparams.items()))
