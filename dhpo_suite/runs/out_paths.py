"""Checks of where a command will write, made before it reads or computes anything.

Without them a bad `--csv` or `--out` was found only at the end (after a whole sweep was read) and came out as a
bare `OSError` / `IsADirectoryError`. Each check returns the problem as a phrase naming the path, or None.
(Permission checks use os.access: a root user passes them, as the write itself would.)
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["dir_problem", "file_problem"]


def file_problem(path: Path | str) -> str | None:
    """Why a file cannot be written at `path` (its folder must exist), or None."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a directory, not a file"
    folder = path.parent
    if not folder.exists():
        return f"the folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a directory"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is not writable"
    if not path.exists() and not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None


def dir_problem(path: Path | str) -> str | None:
    """Why a directory cannot be written (created if missing, with its parents) at `path`, or None."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a directory"
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a directory (cannot create {path} under it)"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{existing} is not writable" + ("" if existing == path else f" (cannot create {path} under it)")
    return None
