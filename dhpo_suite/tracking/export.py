"""`export_run`: mirror a finished (or running) run's history afterwards, read through `RunReader`.

Scalars are read once (one compacted file plus the per-step ones); each step's histograms with one
`step_distributions` read; samples only on the steps that get a table. A broken step file is skipped, named
with its step in the returned `problems` (each step not exported too), and the rest goes on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dhpo_suite.runs import RunFormatError, RunReader, StepRecord

from . import mirrors as registry

__all__ = ["ExportResult", "export_run", "iter_records"]


@dataclass
class ExportResult:
    """What an export wrote."""

    to: str
    location: Path
    steps: int
    problems: list[str] = field(default_factory=list)


def iter_records(reader: RunReader, table_every: int, problems: list[str], steps: set[int] | None = None):
    """(record, has_samples) for every committed step (of `steps`, when given): scalars, 1-D histograms and
    (every N steps) samples."""
    frame = reader.scalars()
    if steps is not None:
        frame = frame[frame["step"].isin(steps)]
    metrics = [c for c in frame.columns if c not in ("step", "time")]
    for row in frame.itertuples(index=False, name=None):
        values = dict(zip(frame.columns, row))
        step = int(values["step"])
        scalars = {k: float(values[k]) for k in metrics if _finite(values[k])}
        record = StepRecord(step, scalars)
        try:
            record.distributions = reader.step_distributions(step)
        except RunFormatError as e:
            problems.append(f"step {step}'s histograms (the step's scalars are exported): {e}")
        samples = table_every > 0 and step % table_every == 0
        if samples:
            try:
                record.samples = reader.samples(step).drop(columns=["step"]).to_dict("records")
            except RunFormatError as e:
                problems.append(f"step {step}'s sampled rollouts (the step's scalars are exported): {e}")
        yield record, samples
    problems.extend(str(p) for p in reader.problems)


def export_run(run_dir: Path | str, to: str, out: Path | str | None = None, *, table_every: int = 10,
               project: str = "dhpo-suite", progress: Callable[[int, int], None] | None = None) -> ExportResult:
    """Write every committed step of `run_dir` to mirror `to` ("tensorboard" or "wandb") at `out` (default:
    beside the run, see `mirrors.default_location`). `progress(done, total)` is called after each step."""
    if to not in registry.LOGGERS:
        raise ValueError(f"--to: {to!r} is not one of: {', '.join(registry.LOGGERS)}")
    reader = RunReader(run_dir)
    mirror = registry.build(to, run_dir, out, project=project)
    problems: list[str] = []
    mirror.start(reader.manifest)
    steps = reader.steps()
    total, done, exported = len(steps), 0, set()
    try:
        for record, samples in iter_records(reader, table_every, problems):
            mirror.log_step(record, samples=samples)
            done += 1
            exported.add(record.step)
            if progress is not None:
                progress(done, total)
    finally:
        mirror.close()
    problems.extend(f"step {s}: not exported (no readable scalars row)" for s in steps if s not in exported)
    return ExportResult(to, Path(mirror.location), done, list(dict.fromkeys(problems)))


def _finite(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False
