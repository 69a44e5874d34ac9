"""The mirror registry: logger names, where each mirror writes, and building one by name.

A mirror has `start(manifest)`, `log_step(record, samples=...)`, `flush()` and `close()`. It never writes
inside the run directory (the `runs` package owns that layout): by default TensorBoard events go to
`<runs root>/tensorboard/<run name>/` and W&B runs to `<runs root>/wandb/`, beside the run directories, so
`tensorboard --logdir <runs root>/tensorboard` shows every run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["LOGGERS", "build", "default_location", "parse_loggers", "preload"]

LOGGERS = ("tensorboard", "wandb")
"""Mirror destinations, by the name `--logger` and `--to` take (verl's `trainer.logger` names)."""


def parse_loggers(spec: str | None) -> tuple[str, ...]:
    """"none", "tensorboard", "wandb" or several comma-separated -> the destinations (ValueError names the bad one)."""
    names = [n.strip() for n in (spec or "none").split(",") if n.strip()]
    if names == ["none"] or not names:
        return ()
    bad = [n for n in names if n not in LOGGERS]
    if bad or "none" in names:
        raise ValueError(f"{', '.join(bad) or 'none'!s} is not one of: none, {', '.join(LOGGERS)} "
                         f"(several: comma-separated, without none)")
    return tuple(dict.fromkeys(names))


def default_location(name: str, run_dir: Path | str) -> Path:
    """Where mirror `name` of the run at `run_dir` writes by default."""
    run_dir = Path(run_dir).resolve()
    return run_dir.parent / "tensorboard" / run_dir.name if name == "tensorboard" else run_dir.parent


def preload(name: str) -> None:
    """Import mirror `name`'s tracker now (ImportError passes; the mirror thread reports it). Importing wandb
    is Python work holding the GIL: the trainer does it before its first step, not beside one."""
    if name == "tensorboard":
        from . import tensorboard

        tensorboard.preload()
    elif name == "wandb":
        import wandb  # noqa: F401


def build(name: str, run_dir: Path | str, out: Path | str | None = None, *, project: str = "dhpo-suite") -> Any:
    """A new (not yet started) mirror `name` for the run at `run_dir`, writing to `out` or its default place."""
    where = Path(out) if out is not None else default_location(name, run_dir)
    if name == "tensorboard":
        from .tensorboard import TensorBoardMirror

        return TensorBoardMirror(where)
    if name == "wandb":
        from .wandb_run import WandbMirror

        return WandbMirror(where, project=project, name=Path(run_dir).name)
    raise ValueError(f"unknown logger {name!r}; expected one of {LOGGERS}")
