"""JSONL input files read one way everywhere: blank lines skipped, each row a JSON object, and every error
naming the file and the line (`bad.jsonl:7: invalid JSON (...)`).

Benchmark files (eval), training data (`dhpo-suite data prepare`) and `dhpo-suite grade` inputs all read
through here; each caller passes its own error class so that its callers catch what they already do.
This module imports nothing of the package, so every part may use it.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Iterator

__all__ = ["input_problem", "iter_jsonl", "parse_row"]


def parse_row(line: str, where: str, error: type[Exception] = ValueError) -> dict:
    """One line as a JSON object; `error("<where>: ...")` when it is not valid JSON or not an object."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise error(f"{where}: invalid JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise error(f"{where}: invalid JSON (nested too deeply)") from None
    if not isinstance(row, dict):
        raise error(f"{where}: expected a JSON object, got {type(row).__name__}")
    return row


def iter_jsonl(path: Path | str, error: type[Exception] = ValueError,
               decode_errors: str = "strict") -> Iterator[tuple[int, dict]]:
    """(line number, row) for each non-blank line of `path`; `error("file:line: ...")` on a line that is not
    UTF-8 (with the default `decode_errors`), not valid JSON or not a JSON object. `decode_errors=
    "surrogateescape"` keeps a row whose strings hold bytes that are not UTF-8 (the grader grades those)."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8", errors=decode_errors)
            except UnicodeDecodeError as e:
                raise error(f"{path}:{lineno}: not UTF-8 (byte {e.start + 1} of the line)") from None
            line = line.removeprefix("\ufeff").rstrip("\r\n")  # an error's column stays on this line
            if line.strip():
                yield lineno, parse_row(line, f"{path}:{lineno}", error)


def input_problem(path: Path | str) -> str | None:
    """Why `path` cannot be read as an input file (said as what it is: a FIFO would block the read for ever,
    /dev/zero never ends), or None for a regular file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{path}: no such file"
    except OSError as e:
        return f"{path}: cannot read it ({e.strerror or e})"
    if stat.S_ISREG(mode):
        return None if os.access(path, os.R_OK) else f"{path}: not readable (permission denied)"
    kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
            "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "not a regular file")
    return f"{path}: is {kind}, not a regular file"
