"""What a run starts from (run directory, model, resumed config and checkpoint, optimizer) and the
small pieces around the loop (progress bar, checkpoint call). The loop itself is in loop.py."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from dhpo_suite.models import local, smollm2
from dhpo_suite.models.local import load_model
from dhpo_suite.runs.format import MANIFEST, RunFormatError, manifest_path
from dhpo_suite.runs.lock import LOCK_FILE, DirLock, LockHeld
from dhpo_suite.runs.manifest import Manifest, read_manifest
from dhpo_suite.runs.reader import RunReader
from dhpo_suite.runs.telemetry_spec import TelemetrySpec
from dhpo_suite.runs.writer import RunWriter
from dhpo_suite.tasks import Task, get_task
from dhpo_suite.train.embedded import checkpoint as ckpt
from dhpo_suite.train.embedded.checkpoint import CheckpointError, Restored, read_trainer_state, save_checkpoint
from dhpo_suite.train.embedded.config import ConfigError, TrainConfig, cache_dir
from dhpo_suite.train.embedded.reward import heldout_reward
from dhpo_suite.train.embedded.sft import warm_started_tiny_model
from dhpo_suite.train.embedded.trainer import Trainer, TrainResult
from dhpo_suite.train.objectives import get_objective

if TYPE_CHECKING:  # annotations only: transformers and the grader pool are loaded by the modules that use them
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from dhpo_suite.grading import GraderPool

    AccuracyFn = Callable[[PreTrainedModel, PreTrainedTokenizerBase], float]

__all__ = ["build", "checkpoint", "finish_if_done", "fmt_reward", "prepare", "progress_bar", "resolve_model_dir", "resumed_config",
           "run_dir_for", "sft_accuracy_fn", "stored_initial", "writer_lock"]

# Fields that may differ when resuming (they do not change what the run computes).
_RESUME_MAY_CHANGE = ("steps", "threads", "grader_workers", "resume", "out", "checkpoint_every", "eval_every",
                      "micro_batch", "chunk_tokens", "logger", "device", "precision")


def run_dir_for(cfg: TrainConfig) -> Path:
    """The run directory: --out, or runs/<algo>-<task>-<UTC time>. A new run never reuses a directory
    (an empty one is fine); --resume needs one that holds a run."""
    if cfg.out is not None:
        out = Path(cfg.out).expanduser()
    else:
        out = Path("runs") / f"{cfg.algo}-{cfg.task}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    if out.exists() and not out.is_dir():
        raise ConfigError("out", f"{out} is a file, not a run directory")
    if cfg.resume:
        if not manifest_path(out).is_file():
            raise ConfigError("resume", f"{out}: no run to resume ({MANIFEST} missing)")
    elif manifest_path(out).exists():
        raise ConfigError("out", f"{out} already holds a run; pass --resume to continue it or choose another --out")
    elif out.is_dir() and any(p.name != LOCK_FILE for p in out.iterdir()):
        raise ConfigError("out", f"{out} exists and is not a run directory; a new run never reuses a directory "
                                 f"(choose a new or empty --out)")
    return out


def writer_lock(run_dir: Path, log: Callable[[str], None]) -> DirLock:
    """The run directory's one-writer lock, taken (the directory created) before any model is loaded.

    ConfigError("out") when the directory cannot be created or written, or another writer holds it.
    """
    lock = DirLock(run_dir)
    try:
        lock.acquire()
    except LockHeld as e:
        raise ConfigError("out", str(e)) from None
    except OSError as e:
        raise ConfigError("out", f"{e.filename or run_dir}: cannot write the run directory there "
                                 f"({e.strerror or e})") from None
    if lock.stale:
        log(f"note: {run_dir}: taking over the lock of a writer that is gone (pid {lock.stale.get('pid')} on "
            f"{lock.stale.get('host')})")
    return lock


def resumed_config(cfg: TrainConfig, stored: dict, explicit: set[str] | frozenset[str] | None = None) -> TrainConfig:
    """The stored config of the run, with the fields that may change on resume taken from `cfg`.

    `explicit`: the fields the user gave (the CLI knows: typer's parameter source). Any of them that contradicts
    the stored run is an error, even when it equals the default. None (the Python API): the fields that
    differ from the default count as given.
    """
    default = TrainConfig()
    known = {f.name for f in dataclasses.fields(TrainConfig)}
    base = TrainConfig(**{k: v for k, v in stored.items() if k in known})
    if explicit is None:
        explicit = {k for k in known if getattr(cfg, k) != getattr(default, k)}
    for name in sorted(set(explicit) & known - {"resume", "out"}):
        mine, theirs = getattr(cfg, name), getattr(base, name)
        if name not in _RESUME_MAY_CHANGE and mine != theirs:
            raise ConfigError(name, f"the run being resumed used {theirs!r}; cannot change it to {mine!r} "
                                    f"(drop the option, or start a new run)")
    changes = {k: getattr(cfg, k) for k in _RESUME_MAY_CHANGE if k in explicit}
    return dataclasses.replace(base, **{**changes, "resume": True, "out": cfg.out}).validate()


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


def prepare(cfg: TrainConfig, explicit: set[str] | frozenset[str] | None = None) -> tuple[Path, TrainConfig]:
    """The run directory and the effective config (the stored one when resuming; see `resumed_config`).

    Resuming with --steps below the steps the run already recorded is an error (they would be orphaned).
    """
    run_dir = run_dir_for(cfg)
    if cfg.resume:
        try:
            manifest = read_manifest(run_dir)
        except RunFormatError as e:
            raise ConfigError("resume", str(e)) from None
        if manifest.backend != "embedded":
            raise ConfigError("resume", f"{run_dir} was written by the {manifest.backend or 'unknown'!r} backend, "
                                        f"not the embedded trainer; it cannot be resumed here")
        stored = manifest.config
        cfg = resumed_config(cfg, stored, explicit)
        _check_precision(cfg, manifest.hparams.get("precision", "fp32"))  # runs before --precision were fp32
        recorded = max(RunReader(run_dir).steps(), default=0)
        if cfg.steps < recorded:
            raise ConfigError("steps", f"{cfg.steps} is fewer than the {recorded} steps {run_dir} has already "
                                       f"recorded; give --steps {recorded} or more")
    _check_tiny_task(cfg)
    return run_dir, cfg


def _check_precision(cfg: TrainConfig, stored: str) -> None:
    """The device may change on --resume, the precision the run computed in may not: "auto" resolves to bf16 on
    a GPU and fp32 on a CPU, so a run moved between them must name its precision."""
    now = cfg.compute().precision
    if now != stored:
        raise ConfigError("precision", f"the run being resumed computed in {stored}; --precision {cfg.precision} is "
                                       f"{now} here (give --precision {stored})")


def _check_tiny_task(cfg: TrainConfig) -> None:
    if cfg.model == "tiny" and "solution" not in get_task(cfg.task).make_problems(1, seed=0)[0]:
        raise ConfigError("task", f"the tiny model's warm-start needs reference solutions; {cfg.task!r} has none "
                                  f"(use an arithmetic task, or --model smollm2-135m / a model directory)")


def finish_if_done(cfg: TrainConfig, run_dir: Path, log: Callable[[str], None]) -> TrainResult | None:
    """When resuming a run whose last complete checkpoint is its final step: nothing to train. Say so with the
    run's recorded figures, mark it completed if a kill left it "running", and return its TrainResult;
    otherwise None."""
    if not cfg.resume:
        return None

    reader = RunReader(run_dir)
    last = max(reader.checkpoints(), default=0)
    if last < cfg.steps:
        return None
    try:
        read_trainer_state(reader.checkpoints()[last])
    except CheckpointError:
        return None  # the final checkpoint is damaged: resume falls back to an older one and redoes the rest
    manifest = read_manifest(run_dir)
    if manifest.status != "completed":
        RunWriter(run_dir, manifest, resume=True).close("completed")
    initial, final = stored_initial(run_dir), _stored_last(reader, "eval/heldout_reward")
    log(f"{run_dir}: already finished at step {last} of {cfg.steps}; held-out reward {fmt_reward(initial)} -> "
        f"{fmt_reward(final)} (give a larger --steps to train further)")
    return TrainResult(run_dir, last, initial, final if final is not None else float("nan"), 0.0)


def _stored_last(reader: RunReader, column: str) -> float | None:
    frame = reader.scalars()
    if column not in frame or frame[column].dropna().empty:
        return None
    return float(frame[column].dropna().iloc[-1])


def fmt_reward(x: float | None) -> str:
    """A held-out reward for the run's closing line ("?" when none was recorded)."""
    return "?" if x is None else f"{x:.3f}"


def _lr_lambda(warmup_steps: int) -> Callable[[int], float]:
    return lambda s: min(1.0, (s + 1) / (warmup_steps + 1)) if warmup_steps else 1.0


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


def restore(cfg: TrainConfig, run_dir: Path, log: Callable[[str], None]) -> Restored | None:
    """Resuming: the newest complete checkpoint that loads (checkpoint.restore_latest), before any worker starts.

    None for a new run or a run without a complete checkpoint; ConfigError("resume") when none loads.
    """
    if not cfg.resume:
        return None
    try:
        return ckpt.restore_latest(run_dir, lambda p: load_model(p, safetensors_only=True), log)
    except ckpt.CheckpointError as e:
        raise ConfigError("resume", str(e)) from None


def build(cfg: TrainConfig, run_dir: Path, pool: GraderPool, log: Callable[[str], None],
          last: Restored | None = None) -> Trainer:
    """The Trainer: model, tokenizer, objective, optimizer, problems, the run's manifest; `last` (from
    `restore`): the checkpoint to continue (its model, optimizer, scheduler and RNG state)."""
    task = get_task(cfg.task)
    max_new = cfg.max_new_tokens or task.max_new_tokens
    objective = get_objective(cfg.algo, **cfg.objective_hparams())
    heldout = task.make_problems(cfg.eval_prompts, seed=cfg.seed, split="test")
    accuracy = sft_accuracy_fn(cfg, task, pool)
    base_dir = resolve_model_dir(cfg, task, accuracy, log)
    model, tokenizer = (last.model, last.tokenizer) if last else load_model(base_dir)
    compute = cfg.compute()
    model.to(compute.device)  # before the optimizer: its state (and a resumed one's) lives with the weights
    log(f"device: {compute.describe()}")
    torch.manual_seed(cfg.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, _lr_lambda(cfg.warmup_steps))
    generator = torch.Generator().manual_seed(cfg.seed)
    start = 1
    if last:
        start = ckpt.load_trainer_state(last.state, optimizer, scheduler, generator) + 1
        log(f"resuming from {last.path} (step {start - 1})")
    problems = task.make_problems(cfg.train_pool, seed=cfg.seed, split="train")
    spec = TelemetrySpec(max_response_length=max_new)
    manifest = Manifest(algorithm=cfg.algo, hparams={**objective.hparams, "lr": cfg.lr, "group_size": cfg.group_size,
                                                     "prompts_per_step": cfg.prompts_per_step,
                                                     "ppo_epochs": cfg.ppo_epochs, "mini_batches": cfg.mini_batches,
                                                     "warmup_steps": cfg.warmup_steps,
                                                     "max_grad_norm": cfg.max_grad_norm,
                                                     "precision": compute.precision},
                        model=str(base_dir), task=cfg.task, backend="embedded", seed=cfg.seed,
                        config=cfg.to_dict(), telemetry=spec.to_dict())
    return Trainer(cfg=cfg, task=task, model=model, tokenizer=tokenizer, objective=objective, optimizer=optimizer,
                   scheduler=scheduler, generator=generator, pool=pool, problems=problems, heldout=heldout,
                   max_new_tokens=max_new, start_step=start, manifest=manifest, spec=spec, compute=compute)


def stored_initial(run_dir: Path) -> float | None:
    """The held-out reward before training, as recorded in step 1 of a run being resumed."""
    frame = RunReader(run_dir).scalars()
    col = "eval/heldout_reward_initial"
    if col not in frame or frame[col].dropna().empty:
        return None
    return float(frame[col].dropna().iloc[0])


def checkpoint(writer: RunWriter, t: Trainer, step: int) -> Path:
    """Save step `step`'s model, tokenizer and trainer state (checkpoint.save_checkpoint)."""
    return save_checkpoint(writer, step, t.model, t.tokenizer, t.optimizer, t.scheduler, t.generator)


class progress_bar:
    """A rich progress bar over steps showing the step reward and the latest held-out reward."""

    def __init__(self, enabled: bool, total: int, done: int) -> None:
        self.enabled, self.total, self.done = enabled, total, done

    def __enter__(self) -> "progress_bar":
        if self.enabled:
            self._p = Progress(TextColumn("[bold]RL[/]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                               TextColumn("{task.fields[info]}"))
            self._p.__enter__()
            self._task = self._p.add_task("steps", total=self.total, completed=self.done, info="")
        return self

    def advance(self, step: int, reward: float, heldout: float) -> None:
        if self.enabled:
            self._p.update(self._task, completed=step, info=f"reward {reward:.2f}  held-out {heldout:.2f}")

    def __exit__(self, *exc: Any) -> None:
        if self.enabled:
            self._p.__exit__(*exc)
