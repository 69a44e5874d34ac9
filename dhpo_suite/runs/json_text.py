"""Parsing the JSON files of a run or results directory with bounded nesting.

Python's C JSON decoder recurses once per `[` or `{`: a crafted manifest.json of a few thousand brackets ends in
`RecursionError` (not a ValueError, so no reader named the file), and a merely deep one parses and then
overflows the stack later (dataclasses.asdict, pandas). Our files nest a few levels (manifest -> config ->
hparams); MAX_DEPTH leaves room for any real config and refuses the rest before parsing, naming the file.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from pathlib import Path
from typing import Any

from .format import RunFormatError

__all__ = ["MAX_DEPTH", "check_depth", "loads_bounded"]

MAX_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a run-format JSON file."""

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def check_depth(text: str, path: Path | str, max_depth: int = MAX_DEPTH) -> None:
    """RunFormatError naming `path` when the JSON `text` nests arrays and objects deeper than `max_depth` (a linear
    scan over the brackets outside strings: nothing is parsed)."""
    steps = (1 if m.group() in "[{" else -1 for m in _BRACKET.finditer(_STRING.sub('""', text)))
    deepest = max(accumulate(steps), default=0)
    if deepest > max_depth:
        raise RunFormatError(path, f"nested {deepest} levels deep; at most {max_depth} levels of arrays and objects "
                                   f"are read (a crafted or damaged file)")


def loads_bounded(text: str, path: Path | str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads(text), but RunFormatError naming `path` for malformed JSON or nesting deeper than `max_depth`.

    The depth is counted before parsing (a linear scan over the brackets outside strings).
    """
    check_depth(text, path, max_depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise RunFormatError(path, f"malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
    except RecursionError:  # unreachable below MAX_DEPTH; kept so no path ends in a bare RecursionError
        raise RunFormatError(path, "nested too deeply to read") from None
