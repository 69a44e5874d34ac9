"""`dhpo-suite grade FILE.jsonl`: grade a JSONL file of responses with the sandboxed grader."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

from dhpo_suite.grading.pool import GraderPool
from dhpo_suite.jsonl import input_problem, iter_jsonl
from dhpo_suite.runs.safe_write import atomic_file

__all__ = ["read_rows", "register"]


MAX_INT_DIGITS = 100_000
DEFAULT_WORKERS = 2
MAX_TIMEOUT_S = 86400.0  # one day: `inf` or `nan` would let one item hold a worker for ever


class RowError(ValueError):
    """A bad input row; the message names the file, the line and the field."""


def register(app: typer.Typer) -> None:
    @app.command(help="Grade a JSONL file: rows with `response` and `answer` (optional `answer_alt`, "
                      "`bench`). Writes each row plus extracted, correct, grader_status, grader_reason, "
                      "answer_source, answer_rule.")
    def grade(
        file: Path = typer.Argument(..., help="JSONL input, one object per line."),
        out: Path = typer.Option(None, "--out", "-o", help="Output JSONL (default: FILE.graded.jsonl)."),
        bench: str = typer.Option(None, "--bench", help="Benchmark name for rows without `bench`."),
        workers: int = typer.Option(DEFAULT_WORKERS, min=1, help="Grader worker processes (at most one per row "
                                                                 "and per core)."),
        timeout: float = typer.Option(
            5.0, help=f"Wall-clock seconds per item before its worker is killed, in (0, {MAX_TIMEOUT_S:g}]."),
    ) -> None:
        target = out or file.with_name(file.name.removesuffix(".jsonl") + ".graded.jsonl")
        # a JSON answer of 5,000 digits is a real (Project Euler style) answer; Python's default limit of
        # 4,300 digits would refuse to read it. 100,000 digits still convert in ~0.1 s.
        sys.set_int_max_str_digits(max(sys.get_int_max_str_digits(), MAX_INT_DIGITS))
        try:
            if not 0 < timeout <= MAX_TIMEOUT_S:  # also refuses nan
                raise RowError(f"--timeout: must be in (0, {MAX_TIMEOUT_S:g}] seconds, got {timeout}")
            rows = read_rows(file)
            _check_writable(target)
        except (RowError, OSError) as err:
            typer.echo(f"error: {err}", err=True)
            raise typer.Exit(2) from None
        if workers > (cap := min(len(rows), _cores())):  # more processes than rows or cores would only wait
            if workers > DEFAULT_WORKERS:  # said when the user asked for more, not for the default on one row
                typer.echo(f"--workers {workers}: capped at {cap} ({len(rows)} rows, {_cores()} cores)", err=True)
            workers = cap
        verdicts = _grade_rows(rows, bench, workers, timeout)
        _write(target, rows, verdicts)
        _summary(verdicts, target)


def _cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _check_writable(target: Path) -> None:
    """Before any grading: the output can be created where it is asked for (a directory that exists
    and takes a new file; not a directory itself). A probe file is created and removed."""
    if target.is_dir():
        raise RowError(f"--out: {target} is a directory, not a file")
    if not target.parent.is_dir():
        raise RowError(f"--out: {target.parent} is not a directory")
    probe = target.with_name(target.name + ".tmp")
    try:
        probe.open("a").close()
        probe.unlink()
    except OSError as err:
        raise RowError(f"--out: cannot write {target} ({err.strerror or err})") from None


def read_rows(path: Path) -> list[dict]:
    """Rows of a JSONL file, checked: `response` (str), `answer` (str or number), optional
    `answer_alt` (str or list of str) and `bench` (str). Blank lines are skipped.

    Bytes that are not UTF-8 inside a string become lone surrogates (`surrogateescape`), so such a row is still
    graded; anything that is not a JSON object (a binary file, another encoding) is one RowError naming the file
    and line."""
    if problem := input_problem(path):  # a FIFO, a directory or /dev/zero said as what it is
        raise RowError(problem)
    try:
        rows = [_check_row(row, f"{path}:{number}")
                for number, row in iter_jsonl(path, RowError, decode_errors="surrogateescape")]
    except RowError:
        raise
    except ValueError as err:  # an integer of more than MAX_INT_DIGITS digits
        raise RowError(f"{path}: {str(err).split(';')[0]}") from None
    if not rows:
        raise RowError(f"{path}: no rows")
    return rows


def _check_row(row: dict, where: str) -> dict:
    for field in ("response", "answer"):
        if field not in row:
            raise RowError(f"{where}: missing field '{field}'")
    if not isinstance(row["response"], str):
        raise RowError(f"{where}: field 'response' must be a string, got {type(row['response']).__name__}")
    answer = row["answer"]
    if isinstance(answer, bool) or not isinstance(answer, (str, int, float)):
        raise RowError(f"{where}: field 'answer' must be a string or a number, got {answer!r:.60}")
    alt = row.get("answer_alt")
    if alt is not None and not (isinstance(alt, str) or (
            isinstance(alt, list) and all(isinstance(a, str) for a in alt))):
        raise RowError(f"{where}: field 'answer_alt' must be a string or a list of strings")
    if row.get("bench") is not None and not isinstance(row["bench"], str):
        raise RowError(f"{where}: field 'bench' must be a string")
    if "truncated" in row and not isinstance(row["truncated"], bool):
        raise RowError(f"{where}: field 'truncated' must be true or false")
    for field in ("problem", "question"):
        if row.get(field) is not None and not isinstance(row[field], str):
            raise RowError(f"{where}: field '{field}' must be a string")
    return row


def _golds(row: dict) -> list[str]:
    alt = row.get("answer_alt") or []
    return [str(row["answer"])] + ([alt] if isinstance(alt, str) else list(alt))


def _grade_rows(rows: list[dict], bench: str | None, workers: int, timeout: float):
    items = [{"response": row["response"], "gold": _golds(row), "bench": row.get("bench") or bench,
              "truncated": row.get("truncated", row.get("finish_reason") == "length"),
              "problem": row.get("problem", row.get("question"))} for row in rows]
    columns = ("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
               TimeRemainingColumn())
    with Progress(*columns, transient=True) as bar, GraderPool(workers, timeout) as pool:
        task = bar.add_task("grading", total=len(items))
        return pool.grade_many(items, progress=lambda done, _: bar.update(task, completed=done))


def _write(target: Path, rows: list[dict], verdicts) -> None:
    """Atomic write (runs.safe_write): a crash or a full disk never leaves a half-written output, nor its temporary
    file; a failed write is one line naming the file (WriteError)."""
    with atomic_file(target, "w", encoding="utf-8") as handle:
        for row, verdict in zip(rows, verdicts, strict=True):
            record = {**row, "extracted": verdict.extracted, "correct": verdict.correct,
                      "grader_status": verdict.status, "grader_reason": verdict.reason,
                      "answer_source": verdict.answer_source, "answer_rule": verdict.answer_rule}
            handle.write(_dumps(record) + "\n")


def _dumps(record: dict) -> str:
    """One JSON line; a record holding lone surrogates (invalid UTF-8 read in, or `"\\udcff"` in the
    input) is written with `\\u` escapes, which any JSON reader reads back as the same string."""
    text = json.dumps(record, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(record, ensure_ascii=True)
    return text


def _summary(verdicts, target: Path) -> None:
    total = len(verdicts)
    correct = sum(v.correct for v in verdicts)
    counts = {s: sum(v.status == s for v in verdicts) for s in ("no_answer", "timeout", "error")}
    fallback = sum(v.answer_source == "fallback" for v in verdicts)
    typer.echo(f"accuracy {correct / total:.4f} ({correct}/{total}); timeouts {counts['timeout']}; "
               f"no answer {counts['no_answer']}; errors {counts['error']}; unmarked answers (fallback) "
               f"{fallback} ({fallback / total:.1%}); wrote {target}")
