"""A cache entry built once, however many processes ask for it at the same time (a sweep starts several runs).

The entry is built in `<entry>.tmp` and renamed into place, so a builder killed mid-way leaves no half-built
entry; a file lock `<entry>.lock` makes concurrent askers wait for one builder instead of all writing the same
temp dir (which corrupted it: one process's `rmtree` removed another's half-written files).
"""

from __future__ import annotations

import fcntl
import shutil
from pathlib import Path
from typing import Callable

__all__ = ["built_once"]


def built_once(final: Path, marker: str, build: Callable[[Path], None]) -> Path:
    """`final`, built by `build(tmp_dir)` unless `final/marker` (the file `build` writes last: the entry is
    complete) exists already."""
    final = Path(final)
    if (final / marker).exists():
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.with_name(final.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (final / marker).exists():
            tmp = final.with_name(final.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            build(tmp)
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
    return final
