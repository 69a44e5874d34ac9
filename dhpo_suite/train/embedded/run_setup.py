"""What a run trains with: the starting model (the tiny model's warm start), the checkpoint to continue from, the
optimizer, and the loop's progress bar. Where the run starts (new, resume or done) is start.py; the loop is loop.py."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dhpo_suite.models import local, smollm2
from dhpo_suite.models.local import load_model
from dhpo_suite.runs.manifest import SHARED_HPARAMS, Manifest, run_hparams
from dhpo_suite.runs.telemetry_spec import TelemetrySpec
from dhpo_suite.tasks import Task, get_task
from dhpo_suite.train.embedded import checkpoint as ckpt
from dhpo_suite.train.embedded.checkpoint import Restored
from dhpo_suite.train.embedded.config import ConfigError, TrainConfig, cache_dir
from dhpo_suite.train.embedded.reward import heldout_reward
from dhpo_suite.train.embedded.sft import warm_started_tiny_model
from dhpo_suite.train.embedded.start import Start
from dhpo_suite.train.embedded.trainer import Trainer
from dhpo_suite.train.objectives import get_objective

if TYPE_CHECKING:  # annotations only: transformers and the grader pool are loaded by the modules that use them
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from dhpo_suite.grading import GraderPool

    AccuracyFn = Callable[[PreTrainedModel, PreTrainedTokenizerBase], float]

__all__ = ["build", "progress_bar", "resolve_model_dir", "restore", "sft_accuracy_fn", "sft_stop_test"]


def resolve_model_dir(cfg: TrainConfig, task: Task, accuracy_fn: AccuracyFn, log: Callable[[str], None]) -> Path:
    """'tiny' -> the cached SFT warm-started tiny model; 'smollm2-135m' -> the converted GGUF; else a checked dir."""
    if cfg.model == "tiny":
        return warm_started_tiny_model(cache_dir(), task, target=cfg.sft_target, max_steps=cfg.sft_max_steps,
                                       seed=cfg.seed, accuracy_fn=accuracy_fn, stop_test=sft_stop_test(cfg, task),
                                       log=log)
    if cfg.model == smollm2.NAME:
        return smollm2.smollm2_dir(cache_dir(), log=log)
    try:
        return local.check_model_dir(cfg.model)
    except local.ModelDirError as e:
        raise ConfigError("model", str(e)) from None


def sft_stop_test(cfg: TrainConfig, task: Task) -> dict[str, Any]:
    """Everything the warm-start's stop test depends on (the warm-start cache key includes all of it)."""
    return dict(problems=64, problem_seed=cfg.seed + 1, max_new_tokens=cfg.max_new_tokens or task.max_new_tokens,
                temperature=cfg.temperature, sample_seed=cfg.seed + 11)


def sft_accuracy_fn(cfg: TrainConfig, task: Task, pool: GraderPool) -> AccuracyFn:
    """accuracy(model, tokenizer): sampled accuracy on 64 held-out problems (the warm-start's stop test)."""
    t = sft_stop_test(cfg, task)
    problems = task.make_problems(t["problems"], seed=t["problem_seed"], split="test")
    return lambda m, tok: heldout_reward(m, tok, task, problems, pool, max_new_tokens=t["max_new_tokens"],
                                         temperature=t["temperature"], seed=t["sample_seed"])


def restore(start: Start, log: Callable[[str], None]) -> Restored | None:
    """Resuming: the newest complete checkpoint that loads (checkpoint.restore_latest), before any worker starts.

    None for a new run or a run without a complete checkpoint; ConfigError("resume") when none loads.
    """
    if start.kind != "resume":
        return None
    try:
        return ckpt.restore_latest(start.run_dir, lambda p: load_model(p, safetensors_only=True), log,
                                   start.checkpoints)
    except ckpt.CheckpointError as e:
        raise ConfigError("resume", str(e)) from None


def build(cfg: TrainConfig, base_dir: Path, pool: GraderPool, log: Callable[[str], None],
          last: Restored | None = None) -> Trainer:
    """The Trainer: model (from `base_dir`, or `last`), tokenizer, objective, optimizer, problems, the run's
    manifest; `last` (from `restore`): the checkpoint to continue (its model, optimizer, scheduler and RNG state)."""
    task = get_task(cfg.task)
    max_new = cfg.max_new_tokens or task.max_new_tokens
    objective = get_objective(cfg.algo, **cfg.objective_hparams())
    heldout = task.make_problems(cfg.eval_prompts, seed=cfg.seed, split="test")
    model, tokenizer = (last.model, last.tokenizer) if last else load_model(base_dir)
    compute = cfg.compute()
    model.to(compute.device)  # before the optimizer: its state (and a resumed one's) lives with the weights
    log(f"device: {compute.describe()}")
    torch.manual_seed(cfg.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    warmup = cfg.warmup_steps  # linear warm-up over `warmup` RL steps, then constant (factor 1 at warmup 0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / (warmup + 1)))
    generator = torch.Generator().manual_seed(cfg.seed)
    start = 1
    if last:
        start = ckpt.load_trainer_state(last.state, optimizer, scheduler, generator) + 1
        log(f"resuming from {last.path} (step {start - 1})")
    problems = task.make_problems(cfg.train_pool, seed=cfg.seed, split="train")
    spec = TelemetrySpec(max_response_length=max_new)
    shared = {k: getattr(cfg, k) for k in SHARED_HPARAMS}
    manifest = Manifest(algorithm=cfg.algo, hparams=run_hparams(objective.hparams, shared, precision=compute.precision),
                        model=str(base_dir), task=cfg.task, backend="embedded", seed=cfg.seed,
                        config=cfg.to_dict(), telemetry=spec.to_dict())
    return Trainer(cfg=cfg, task=task, model=model, tokenizer=tokenizer, objective=objective, optimizer=optimizer,
                   scheduler=scheduler, generator=generator, pool=pool, problems=problems, heldout=heldout,
                   max_new_tokens=max_new, start_step=start, manifest=manifest, spec=spec, compute=compute)


@contextmanager
def progress_bar(enabled: bool, total: int, done: int) -> Iterator[Callable[[int, float, float], None]]:
    """A rich progress bar over steps; yields advance(step, step reward, latest held-out reward)."""
    if not enabled:
        yield lambda step, reward, heldout: None
        return
    with Progress(TextColumn("[bold]RL[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[info]}")) as p:
        task = p.add_task("steps", total=total, completed=done, info="")
        yield lambda step, reward, heldout: p.update(task, completed=step,
                                                     info=f"reward {reward:.2f}  held-out {heldout:.2f}")
