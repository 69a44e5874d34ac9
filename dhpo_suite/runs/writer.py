"""RunWriter: the only code that writes a run directory's training files (crash-safe, atomic).

Every file is written to a hidden temp name in its final folder, flushed, then `os.replace`d into place,
so a reader (or a SIGKILL at any instant) sees either the old file or the new one, never half of one.
A step's distributions, outliers and samples are written before its scalars row; the scalars file is the
commit point. Every `compact_every` (25) steps the per-step scalar files are folded into `scalars.parquet`
(rewritten atomically, then the folded per-step files are deleted), so reading 1000 steps opens a
handful of files.
"""

from __future__ import annotations

import atexit
import json
import os
import time
import warnings
from pathlib import Path
from types import TracebackType
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from .format import (
    KINDS,
    MANIFEST,
    SCALARS_COMPACT,
    RunFormatError,
    checkpoint_marker,
    checkpoint_path,
    parse_step_file,
    sorted_step_files,
    step_file,
)
from .manifest import STATUSES, Manifest, read_manifest, utc_now
from .reader import read_scalars_file
from .records import StepRecord
from .safe_write import WriteError, atomic_write_bytes

__all__ = ["RunWriter", "atomic_write_bytes", "write_parquet_atomic", "mark_checkpoint_complete"]

COMPRESSION = "zstd"


def write_parquet_atomic(path: Path, table: pa.Table, fsync: bool = True) -> None:
    """Parquet (zstd) written via temp file + rename."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=COMPRESSION)
    atomic_write_bytes(path, sink.getvalue().to_pybytes(), fsync)


def mark_checkpoint_complete(checkpoint_dir: Path | str, **info: Any) -> Path:
    """Write the COMPLETE marker (JSON: time + `info`) after every file of the checkpoint is on disk."""
    marker = checkpoint_marker(checkpoint_dir)
    payload = json.dumps({"completed_at": utc_now(), **info}, indent=1).encode()
    atomic_write_bytes(marker, payload)
    return marker


class RunWriter:
    """Writes one run directory. Use as a context manager: an exception closes the run as "failed".

        with RunWriter(run_dir, Manifest(algorithm="dhpo-e", ...)) as w:
            for step in ...:
                w.write_step(record)                      # StepRecord from TelemetryAccumulator.to_record
                ckpt = w.checkpoint_dir(step)             # save the HF model there, then:
                w.checkpoint_complete(step)
        # -> status "completed"

    `resume=True` reopens an existing run (status goes back to "running"); otherwise an existing
    manifest is an error so two runs never share a directory.
    """

    def __init__(
        self,
        run_dir: Path | str,
        manifest: Manifest,
        *,
        resume: bool = False,
        compact_every: int = 25,
        fsync: bool = True,
    ):
        self.run_dir = Path(run_dir)
        self.compact_every = int(compact_every)
        self.fsync = fsync
        self._closed = False
        exists = (self.run_dir / MANIFEST).exists()
        if exists and not resume:
            raise FileExistsError(f"{self.run_dir / MANIFEST}: run directory already holds a run (pass resume=True)")
        if exists:
            old = read_manifest(self.run_dir)
            manifest.started_at = manifest.started_at or old.started_at
        self.manifest = manifest
        self.manifest.name = self.manifest.name or self.run_dir.name
        self.manifest.fill_provenance()
        self.manifest.status, self.manifest.ended_at, self.manifest.error = "running", None, None
        for kind in KINDS:
            (self.run_dir / kind).mkdir(parents=True, exist_ok=True)
            for stale in (self.run_dir / kind).glob(".tmp-*"):  # torn writes of a killed writer
                stale.unlink(missing_ok=True)
        self._write_manifest()
        # A process that exits without close() (sys.exit, an uncaught error outside `with`) still records
        # how it ended; SIGKILL cannot be caught and leaves "running".
        atexit.register(self._close_at_exit)
        self._pending = len(self._per_step_scalar_files())
        if self._pending and self.compact_every:  # a killed run left per-step files: fold them now
            self.compact()

    # ---- steps ----
    def write_step(self, record: StepRecord) -> None:
        """Persist one step; when this returns the step is committed and readable."""
        if self._closed:
            raise RuntimeError(f"{self.run_dir}: writer is closed")
        s = int(record.step)
        if s < 0:
            raise ValueError(f"step must be >= 0, got {s}")
        write_parquet_atomic(step_file(self.run_dir, "distributions", s), record.distributions_table(), self.fsync)
        write_parquet_atomic(step_file(self.run_dir, "outliers", s), record.outliers_table(), self.fsync)
        write_parquet_atomic(step_file(self.run_dir, "samples", s), record.samples_table(), self.fsync)
        # Commit point: the step exists once its scalars row exists.
        write_parquet_atomic(step_file(self.run_dir, "scalars", s), record.scalars_table(time.time()), self.fsync)
        self._pending += 1
        if self.compact_every and self._pending >= self.compact_every:
            self.compact()

    def compact(self) -> None:
        """Fold per-step scalar files into scalars.parquet (atomic), then delete the folded files.

        A kill between the rename and the deletes leaves duplicates, which the reader drops (per-step rows win).
        """
        files = self._per_step_scalar_files()
        if not files:
            return
        target = self.run_dir / "scalars" / SCALARS_COMPACT
        tables = []
        if target.exists():
            try:
                tables.append(read_scalars_file(target))
            except RunFormatError as e:  # keep the evidence, start a new compacted file
                aside = target.with_name(f"{SCALARS_COMPACT}.corrupt-{int(time.time())}")
                os.replace(target, aside)
                warnings.warn(f"{e}; moved to {aside.name}", stacklevel=2)
        for f in list(files):
            try:
                tables.append(read_scalars_file(f, expect_step=parse_step_file(f)))
            except RunFormatError:
                files.remove(f)  # left in place: the reader reports it
        if not tables:
            return
        merged = pa.concat_tables(tables, promote_options="permissive")
        # Later rows (per-step files, in step order) override compacted ones for the same step.
        steps = merged.column("step").to_pylist()
        last = {s: i for i, s in enumerate(steps)}
        keep = sorted(last.values(), key=lambda i: steps[i])
        write_parquet_atomic(target, merged.take(pa.array(keep, pa.int64())), self.fsync)
        for f in files:
            f.unlink(missing_ok=True)
        self._pending = 0

    def _per_step_scalar_files(self) -> list[Path]:
        return sorted_step_files((self.run_dir / "scalars").glob("step-*.parquet"))

    # ---- checkpoints ----
    def checkpoint_dir(self, step: int) -> Path:
        """Create and return `checkpoints/step-{step:06d}/`; call checkpoint_complete(step) once saved."""
        path = checkpoint_path(self.run_dir, step)
        path.mkdir(parents=True, exist_ok=True)
        return path

    def checkpoint_complete(self, step: int, **info: Any) -> Path:
        """Mark the checkpoint of `step` complete (evaluator and dashboard ignore unmarked ones)."""
        return mark_checkpoint_complete(checkpoint_path(self.run_dir, step), step=int(step), **info)

    # ---- status ----
    def close(self, status: str = "completed", error: str | None = None) -> None:
        """Compact scalars and record the final status ("completed", "failed" or "interrupted")."""
        if self._closed:
            return
        if status not in STATUSES or status == "running":
            raise ValueError(f"close status must be one of {STATUSES[1:]}, got {status!r}")
        self.compact()
        self.manifest.status, self.manifest.ended_at, self.manifest.error = status, utc_now(), error
        self._write_manifest()
        self._closed = True
        atexit.unregister(self._close_at_exit)

    def _close_at_exit(self) -> None:
        if self._closed:
            return
        try:
            self.close("failed", "the process exited without closing the run")
        except Exception as e:  # never raise from an exit hook
            warnings.warn(f"{self.run_dir}: could not close the run at exit: {e}", stacklevel=1)

    def __enter__(self) -> "RunWriter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.close("completed")
            return
        status = "interrupted" if issubclass(exc_type, KeyboardInterrupt) else "failed"
        try:
            # an interrupt names its signal when a handler raised it with one (train/cli.py: "SIGTERM")
            self.close(status, (str(exc) or "KeyboardInterrupt") if status == "interrupted"
                       else f"{exc_type.__name__}: {exc}")
        except WriteError:  # the disk that failed the run fails its manifest too: the first error is the one told
            self._closed = True
            atexit.unregister(self._close_at_exit)

    def _write_manifest(self) -> None:
        data = json.dumps(self.manifest.to_dict(), indent=1, default=_json_default).encode()
        atomic_write_bytes(self.run_dir / MANIFEST, data, self.fsync)


def _json_default(v: Any) -> Any:
    if hasattr(v, "item"):
        return v.item()
    if isinstance(v, Path):
        return str(v)
    if isinstance(v, (set, tuple)):
        return list(v)
    raise TypeError(f"manifest value of type {type(v).__name__} is not JSON-serialisable: {v!r}")

