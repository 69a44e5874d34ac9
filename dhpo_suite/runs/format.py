"""Run-directory layout: format version, file names, errors. See docs/run-format.md.

Only this module knows where files live; the writer, the reader and the evaluator's results module ask it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

__all__ = [
    "FORMAT_VERSION",
    "KINDS",
    "MANIFEST",
    "RunFormatError",
    "Problem",
    "step_file",
    "manifest_path",
    "checkpoint_path",
    "run_of_checkpoint",
    "complete_checkpoints",
    "checkpoint_marker",
    "is_checkpoint_complete",
    "parse_step_file",
    "sorted_step_files",
]

FORMAT_VERSION = 1
"""Bumped on any incompatible change; readers refuse a newer major version with a clear error."""

MANIFEST = "manifest.json"
SCALARS_COMPACT = "scalars.parquet"  # all compacted steps, rewritten atomically
KINDS = ("scalars", "distributions", "outliers", "samples")
"""Per-step file kinds, each in its own folder: `<kind>/step-000042.parquet`. `scalars` is written last and
is the commit point of a step: a step exists iff its scalars row exists."""
CHECKPOINTS = "checkpoints"
CHECKPOINT_MARKER = "COMPLETE"
EVALS = "evals"


class RunFormatError(ValueError):
    """A run-directory file is missing, malformed or truncated. The message starts with the file path."""

    def __init__(self, path: Path | str, reason: str):
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


@dataclass(frozen=True)
class Problem:
    """Something the reader skipped: the file and why."""

    path: Path
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def step_file(run_dir: Path | str, kind: str, step: int) -> Path:
    """Path of one step's file of `kind` (one of KINDS)."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}; expected one of {KINDS}")
    return Path(run_dir) / kind / f"step-{int(step):06d}.parquet"


def parse_step_file(path: Path) -> int | None:
    """Step number of a `step-NNNNNN.parquet` name, None for anything else (temp files, strays)."""
    name = path.name
    if not (name.startswith("step-") and name.endswith(".parquet")):
        return None
    digits = name[len("step-") : -len(".parquet")]
    return int(digits) if digits.isdigit() else None


def sorted_step_files(paths: Iterable[Path]) -> list[Path]:
    """The `step-NNNNNN.parquet` files among `paths`, in step order (anything else left out)."""
    steps = {p: s for p in paths if (s := parse_step_file(p)) is not None}
    return sorted(steps, key=steps.__getitem__)


def manifest_path(run_dir: Path | str) -> Path:
    """`<run_dir>/manifest.json`: its presence is what makes a directory a run directory."""
    return Path(run_dir) / MANIFEST


def checkpoint_path(run_dir: Path | str, step: int) -> Path:
    """`checkpoints/step-{step:06d}/`: a normal Hugging Face model directory written by the trainer."""
    return Path(run_dir) / CHECKPOINTS / f"step-{int(step):06d}"


def run_of_checkpoint(path: Path | str) -> Path | None:
    """The run directory a `checkpoints/step-N/` directory belongs to; None for any other path."""
    path = Path(path)
    return path.parents[1] if path.parent.name == CHECKPOINTS and len(path.parents) > 1 else None


def complete_checkpoints(run_dir: Path | str) -> dict[int, Path]:
    """{step: path} of the run's checkpoints whose COMPLETE marker exists (half-written ones are left out), by
    step; {} when the run has no checkpoints folder."""
    folder = Path(run_dir) / CHECKPOINTS
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return {}
    return dict(sorted({int(n[5:]): folder / n for n in names
                        if n.startswith("step-") and n[5:].isdigit() and is_checkpoint_complete(folder / n)}.items()))


def checkpoint_marker(checkpoint_dir: Path | str) -> Path:
    """The marker file whose presence says every file of the checkpoint is fully written."""
    return Path(checkpoint_dir) / CHECKPOINT_MARKER


def is_checkpoint_complete(checkpoint_dir: Path | str) -> bool:
    """True when the trainer finished writing this checkpoint (its COMPLETE marker exists)."""
    return checkpoint_marker(checkpoint_dir).is_file()
