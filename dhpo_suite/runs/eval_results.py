"""Evaluation results: per-sample JSONL (append-only; flushed per write, fsync at most every second) and one
summary JSON per evaluation.

Layout of one evaluation directory (`--out DIR`, or `RUN_DIR/evals/step-XXXXXX/` for a run's checkpoint):

    config.json              the evaluation's identity (model path + fingerprint, sampling, per-benchmark template,
                             budget, stop ids, data source); checked field by field on --resume
    <bench>.samples.jsonl    one JSON object per sample, appended as samples finish (SAMPLE_FIELDS)
    <bench>.samples.shard{r}of{N}.jsonl   the same, written by data-parallel worker r of N (read together)
    summary.json             metrics per benchmark + the paper's AVG, rewritten atomically

A SIGKILL can leave a torn last line in a samples file: the reader skips it and reports it, and the writer
cuts it off before appending. A malformed line anywhere else is an error naming the file and line.
No torch here (the dashboard reads these files).
"""

from __future__ import annotations

import json
import os
import re
import time
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from dhpo_suite.runs.format import EVALS, Problem, RunFormatError
from dhpo_suite.runs.json_text import loads_bounded
from dhpo_suite.runs.safe_write import WriteError, atomic_file

__all__ = [
    "RESULTS_VERSION",
    "SAMPLE_FIELDS",
    "SKIP_STATUSES",
    "CONFIG",
    "SUMMARY",
    "SampleWriter",
    "SamplesRead",
    "read_samples",
    "rewrite_samples",
    "samples_path",
    "shard_samples_path",
    "bench_sample_files",
    "read_bench_samples",
    "has_samples",
    "write_json_atomic",
    "read_json",
    "checkpoint_eval_dir",
    "list_checkpoint_evals",
]

RESULTS_VERSION = 1
"""Version of the evaluation-results format (stored in config.json and summary.json)."""
CONFIG = "config.json"
SUMMARY = "summary.json"
SAMPLE_FIELDS = ("bench", "problem_id", "sample", "prompt", "problem", "response", "n_tokens", "finish_reason",
                 "gold", "extracted", "answer_source", "correct", "status", "reason")
"""Keys of every sample record. `gold` is the list of accepted gold answers; `answer_source` where the grader
found `extracted` (boxed | marker | fallback, null when nothing was found; records written before it have
no such key); `problem` the problem text the grader was given (--regrade gives it again; older records have
none); `status` is the grader's verdict status (ok | no_answer | timeout | error), or why the sample
was never generated (SKIP_STATUSES), and `reason` its one-line explanation."""
SKIP_STATUSES = ("prompt_too_long", "row_too_large")
"""Statuses of samples recorded without generation (finish_reason `skipped`, graded incorrect)."""
_STEP_DIR = re.compile(r"^step-(\d{6,})$")


def samples_path(eval_dir: Path | str, bench: str) -> Path:
    """`<eval_dir>/<bench>.samples.jsonl`."""
    return Path(eval_dir) / f"{bench}.samples.jsonl"


def shard_samples_path(eval_dir: Path | str, bench: str, rank: int, world: int) -> Path:
    """`<eval_dir>/<bench>.samples.shard{rank}of{world}.jsonl`: one data-parallel worker's samples."""
    return Path(eval_dir) / f"{bench}.samples.shard{rank}of{world}.jsonl"


def bench_sample_files(eval_dir: Path | str, bench: str) -> list[Path]:
    """Every samples file of `bench` in `eval_dir`: the main file and any data-parallel shards."""
    main = samples_path(eval_dir, bench)
    return ([main] if main.exists() else []) + sorted(Path(eval_dir).glob(f"{bench}.samples.shard*of*.jsonl"))


def has_samples(eval_dir: Path | str) -> bool:
    """True when `eval_dir` holds any samples file (any benchmark, main file or shard): stored results."""
    return any(Path(eval_dir).glob("*.samples*.jsonl"))


def read_bench_samples(eval_dir: Path | str, bench: str) -> "SamplesRead":
    """All samples of `bench` (main file + shards), each (problem_id, sample) once (first file wins)."""
    records: dict[tuple, dict] = {}
    skipped: list[Problem] = []
    for path in bench_sample_files(eval_dir, bench):
        got = read_samples(path)
        skipped += got.skipped
        for r in got.records:
            records.setdefault((r["problem_id"], r["sample"]), r)
    return SamplesRead(list(records.values()), skipped)


def checkpoint_eval_dir(run_dir: Path | str, step: int) -> Path:
    """`RUN_DIR/evals/step-{step:06d}/`: results for the checkpoint of that step."""
    return Path(run_dir) / EVALS / f"step-{int(step):06d}"


def list_checkpoint_evals(run_dir: Path | str) -> dict[int, Path]:
    """{step: eval dir} for every `evals/step-XXXXXX/` of a run that has a summary.json (accuracy vs step)."""
    root = Path(run_dir) / EVALS
    children = sorted(root.iterdir()) if root.is_dir() else []
    return {int(m.group(1)): c for c in children if (m := _STEP_DIR.match(c.name)) and (c / SUMMARY).is_file()}


def _replace_atomic(path: Path, text: str) -> None:
    """Write `text` to a temp file, fsync, rename over `path`, fsync the folder: readers see the old or the new
    file, never half."""
    with atomic_file(path, "w", encoding="utf-8") as f:  # runs.safe_write: WriteError names the file
        f.write(text)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_json_atomic(path: Path | str, obj: Any) -> None:
    """Write `obj` as JSON (sorted keys, no NaN) atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace_atomic(path, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_json(path: Path | str) -> dict:
    """Read a JSON object; a missing or malformed file raises RunFormatError naming it."""
    path = Path(path)
    try:
        obj = loads_bounded(path.read_text(encoding="utf-8"), path)
    except FileNotFoundError:
        raise RunFormatError(path, "missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise RunFormatError(path, f"unreadable: {e}") from None
    if not isinstance(obj, dict):
        raise RunFormatError(path, "expected a JSON object")
    return obj


@dataclass
class SamplesRead:
    """What `read_samples` found: the records, and what it skipped (a torn last line)."""

    records: list[dict]
    skipped: list[Problem] = field(default_factory=list)
    valid_bytes: int = 0
    """Length of the file prefix holding complete lines (the writer truncates to it before appending)."""


def read_samples(path: Path | str) -> SamplesRead:
    """Read a samples file. A torn last line (no newline or invalid JSON) is skipped and reported in
    `skipped`; a malformed earlier line raises RunFormatError with its line number. Missing file: empty."""
    path = Path(path)
    if not path.exists():
        return SamplesRead([])
    data = path.read_bytes()
    lines = data.split(b"\n")
    records, skipped, valid = [], [], 0
    for i, raw in enumerate(lines):
        last = i == len(lines) - 1  # the text after the final newline ("" when the file ends cleanly)
        if last and not raw:
            break
        try:
            rec = json.loads(raw)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
        except (ValueError, RecursionError) as e:  # a crafted line nested thousands deep is malformed too
            e = e if isinstance(e, ValueError) else ValueError("nested too deeply")
            if last:
                skipped.append(Problem(path, f"line {i + 1}: torn last line skipped ({len(raw)} bytes)"))
                break
            raise RunFormatError(path, f"line {i + 1}: malformed record ({e})") from None
        if last:  # parsed, but no newline: a write cut short exactly at the record's end
            skipped.append(Problem(path, f"line {i + 1}: last line has no newline; skipped"))
            break
        records.append(rec)
        valid += len(raw) + 1
    return SamplesRead(records, skipped, valid)


class SampleWriter:
    """Append sample records to `<bench>.samples.jsonl`. Each `write_batch` is flushed to the OS at once (a
    killed process loses nothing written) and fsynced when `fsync_every` seconds have passed since the last
    fsync, and on close (a power cut loses at most that long).

    On open, a torn tail left by a crash is cut off so new lines never glue onto half a record.
    """

    def __init__(self, path: Path | str, fsync_every: float = 1.0):
        self.path = Path(path)
        self.fsync_every = fsync_every
        self._synced = time.monotonic()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.exists():
            valid = read_samples(self.path).valid_bytes
            if valid != self.path.stat().st_size:
                os.truncate(self.path, valid)
        self._f = open(self.path, "ab", buffering=0)  # unbuffered: a failed write leaves nothing queued behind

    def write_batch(self, records: Iterable[dict]) -> int:
        """Append records (one JSON line each), flush, fsync if due. Returns how many were written."""
        lines = [json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records]
        data, before = memoryview("".join(lines).encode("utf-8")), self._f.tell()
        try:
            while data:
                data = data[self._f.write(data):]
            if time.monotonic() - self._synced >= self.fsync_every:
                self.sync()
        except OSError as e:  # a full disk: the batch is taken back whole, the earlier samples stay
            with suppress(OSError):
                os.truncate(self.path, before)
            raise WriteError(self.path, e) from None
        return len(lines)

    def sync(self) -> None:
        os.fsync(self._f.fileno())
        self._synced = time.monotonic()

    def close(self) -> None:
        if not self._f.closed:
            try:
                self.sync()
            finally:
                self._f.close()

    def __enter__(self) -> "SampleWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def rewrite_samples(path: Path | str, records: Iterable[dict]) -> None:
    """Replace a samples file atomically (used by --regrade, which changes verdicts of stored samples)."""
    _replace_atomic(Path(path), "".join(json.dumps(r, ensure_ascii=False, allow_nan=False) + "\n" for r in records))
