"""Where a run starts: new, resumed, or already done. The run directory is read once, and stays locked while the
run trains.

    with open_run(cfg, explicit, log) as start:   # start.kind: "new" | "resume" | "done"
        ...

A new run never reuses a directory (an empty one is fine). Resuming reads the run's manifest and committed steps
once: its config is the stored one with the fields that may change taken from the user's (any other given field
that differs is an error), the precision must match, and --steps may not cut recorded steps. A resumed run whose
newest complete checkpoint is its last step is "done": nothing trains; it is marked completed if a kill left it
"running". Every check comes before the directory is locked or a model loads; the checkpoint to continue from is
chosen later (checkpoint.restore_latest, the one resume policy).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

import pandas as pd

from dhpo_suite.runs.format import MANIFEST, RunFormatError, manifest_path
from dhpo_suite.runs.lock import LOCK_FILE, DirLock, LockHeld
from dhpo_suite.runs.manifest import Manifest, read_manifest
from dhpo_suite.runs.reader import RunReader
from dhpo_suite.runs.writer import RunWriter
from dhpo_suite.tasks import get_task
from dhpo_suite.train.embedded.checkpoint import CheckpointError, read_trainer_state
from dhpo_suite.train.embedded.config import ConfigError, TrainConfig

__all__ = ["Start", "fmt_reward", "open_run", "resumed_config", "run_dir_for"]

RESUME_MAY_CHANGE = ("steps", "threads", "grader_workers", "resume", "out", "checkpoint_every", "eval_every",
                     "micro_batch", "chunk_tokens", "logger", "device", "precision")
"""Fields a resumed run may take from the user: how far, how fast and where, never what is trained."""


@dataclass(frozen=True)
class Start:
    """What `train` starts from."""

    kind: Literal["new", "resume", "done"]
    run_dir: Path
    cfg: TrainConfig  # the effective config (resuming: the stored one, see resumed_config)
    initial: float | None = None  # resuming: the held-out reward before training, as step 1 recorded it
    final: float | None = None  # resuming: the last held-out reward recorded
    last_checkpoint: int = 0  # resuming: the newest complete checkpoint's step
    checkpoints: dict[int, Path] = dataclasses.field(default_factory=dict)  # resuming: {step: complete checkpoint}


@contextmanager
def open_run(cfg: TrainConfig, explicit: set[str] | frozenset[str] | None,
             log: Callable[[str], None]) -> Iterator[Start]:
    """The run's Start, its directory locked for one writer until the block ends (see the module doc).
    `cfg` is validated; ConfigError names the option at fault."""
    run_dir = run_dir_for(cfg)
    if not cfg.resume:
        _check_tiny_task(cfg)
        with writer_lock(run_dir, log):
            yield Start("new", run_dir, cfg)
        return
    manifest = _read_manifest(run_dir)
    cfg = resumed_config(cfg, manifest.config, explicit)
    _check_precision(cfg, manifest.hparams.get("precision", "fp32"))  # runs before --precision were fp32
    reader = RunReader(run_dir)
    scalars = reader.scalars()
    recorded = int(scalars["step"].max()) if len(scalars) else 0
    if cfg.steps < recorded:
        raise ConfigError("steps", f"{cfg.steps} is fewer than the {recorded} steps {run_dir} has already "
                                   f"recorded; give --steps {recorded} or more")
    _check_tiny_task(cfg)
    with writer_lock(run_dir, log):
        checkpoints = reader.checkpoints()
        last = max(checkpoints, default=0)
        start = Start("resume", run_dir, cfg, _recorded(scalars, "eval/heldout_reward_initial", 0),
                      _recorded(scalars, "eval/heldout_reward", -1), last, checkpoints)
        if last >= cfg.steps and _loads(checkpoints[last]):
            start = dataclasses.replace(start, kind="done")
            if manifest.status != "completed":
                RunWriter(run_dir, manifest, resume=True).close("completed")
            log(f"{run_dir}: already finished at step {last} of {cfg.steps}; held-out reward "
                f"{fmt_reward(start.initial)} -> {fmt_reward(start.final)} (give a larger --steps to train further)")
        yield start


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


@contextmanager
def writer_lock(run_dir: Path, log: Callable[[str], None]) -> Iterator[DirLock]:
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
    with lock:
        yield lock


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
        if name not in RESUME_MAY_CHANGE and mine != theirs:
            raise ConfigError(name, f"the run being resumed used {theirs!r}; cannot change it to {mine!r} "
                                    f"(drop the option, or start a new run)")
    changes = {k: getattr(cfg, k) for k in RESUME_MAY_CHANGE if k in explicit}
    return dataclasses.replace(base, **{**changes, "resume": True, "out": cfg.out}).validate()


def fmt_reward(x: float | None) -> str:
    """A held-out reward for the run's closing line ("?" when none was recorded)."""
    return "?" if x is None else f"{x:.3f}"


def _read_manifest(run_dir: Path) -> Manifest:
    try:
        manifest = read_manifest(run_dir)
    except RunFormatError as e:
        raise ConfigError("resume", str(e)) from None
    if manifest.backend != "embedded":
        raise ConfigError("resume", f"{run_dir} was written by the {manifest.backend or 'unknown'!r} backend, "
                                    f"not the embedded trainer; it cannot be resumed here")
    return manifest


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


def _loads(checkpoint: Path) -> bool:
    """Whether a checkpoint's trainer state reads (a damaged final one is redone from an older one)."""
    try:
        read_trainer_state(checkpoint)
    except CheckpointError:
        return False
    return True


def _recorded(scalars: pd.DataFrame, column: str, at: int) -> float | None:
    """The `at`-th recorded value of a column (0: the first, -1: the last); None when none was recorded."""
    values = scalars[column].dropna() if column in scalars else pd.Series(dtype=float)
    return float(values.iloc[at]) if len(values) else None
