"""JSONL input files read one way everywhere: blank lines skipped, each row a JSON object, and every error
naming the file and the line (`bad.jsonl:7: invalid JSON (...)`).

Benchmark files (eval), training data (`dhpo-suite data prepare`) and `dhpo-suite grade` inputs all read
through `iter_jsonl`; each caller passes its own error class so that its callers catch what they already do.
This module imports nothing of the package, so every part may use it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

__all__ = ["iter_jsonl"]


def iter_jsonl(path: Path | str, error: type[Exception] = ValueError) -> Iterator[tuple[int, dict]]:
    """(line number, row) for each non-blank line of `path`; `error("file:line: ...")` on a line that is not
    valid JSON or not a JSON object."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line.rstrip("\r\n"))  # the column of an error at the end stays on this line
            except json.JSONDecodeError as e:
                raise error(f"{path}:{lineno}: invalid JSON ({e.msg} at column {e.colno})") from None
            if not isinstance(row, dict):
                raise error(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            yield lineno, row
