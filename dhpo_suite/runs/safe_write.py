"""Every file the project writes goes through here: a temporary name in the same folder, fsync, rename.

A reader (or a crash at any instant) sees the old file or the new one, never half of one; on any OS error (a full
disk, a file-size limit, a folder made read-only meanwhile) the temporary file or folder is removed, the earlier
output is left as it was, and `WriteError` says which file and why in one line. `dhpo-suite`'s entry point turns
a WriteError into that line and exit status 2, whichever command hit it.

    with atomic_file(target, "w", encoding="utf-8") as f:   # checkpoints, grade output, CSVs, Parquet, JSON
        f.write(text)
    with staged_dir(folder) as tmp:                         # several files that belong together
        write_into(tmp)                                     # each file of tmp is then renamed into folder

No package imports here: every part may use it.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, Any, Iterator

__all__ = ["WriteError", "atomic_file", "atomic_write_bytes", "staged_dir", "temp_name"]


class WriteError(Exception):
    """Writing `path` failed; the message names the file and the cause, and says nothing was changed."""

    def __init__(self, path: Path | str, cause: BaseException | str):
        self.path = Path(path)
        why = cause if isinstance(cause, str) else (getattr(cause, "strerror", None) or str(cause) or
                                                    type(cause).__name__)
        super().__init__(f"{path}: cannot write it ({why}); the earlier output, if any, is unchanged")


def temp_name(path: Path) -> Path:
    """The hidden temporary name of `path` in its own folder (a rename there is atomic)."""
    return path.with_name(f".tmp-{os.getpid()}-{path.name}")


@contextmanager
def atomic_file(path: Path | str, mode: str = "wb", *, fsync: bool = True, **open_args: Any) -> Iterator[IO[Any]]:
    """Yield a file open on the temporary name; on a clean exit it is flushed, fsynced and renamed to `path`.
    Any OSError (the body's writes included) is a WriteError naming `path`; the temporary file never stays."""
    path = Path(path)
    tmp = temp_name(path)
    try:
        with open(tmp, mode, **open_args) as f:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        raise WriteError(path, e) from None
    finally:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: Path | str, data: bytes, fsync: bool = True) -> None:
    """`data` into `path` atomically (its folder created if missing); WriteError on an OS error."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise WriteError(path, e) from None
    with atomic_file(path, "wb", fsync=fsync) as f:
        f.write(data)


@contextmanager
def staged_dir(folder: Path | str, errors: tuple[type[BaseException], ...] = (OSError,)) -> Iterator[Path]:
    """Yield an empty temporary folder beside `folder` (inside it, if it exists); on a clean exit each file in it
    is fsynced and renamed into `folder` (created if missing; files already there under other names stay). On an
    error the temporary folder is removed and `folder` is as it was; an OSError (or one of `errors`: a writer
    library's own error for a full disk) is a WriteError naming the file it was writing."""
    folder = Path(folder)
    # inside the folder when it exists (it may be a mount point: a rename must stay on its file system)
    tmp = folder / f".tmp-{os.getpid()}-staged" if folder.is_dir() else temp_name(folder)
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        yield tmp
        files = sorted(p for p in tmp.rglob("*") if p.is_file())
        for p in files:
            with open(p, "rb") as f:
                os.fsync(f.fileno())
        for p in files:
            final = folder / p.relative_to(tmp)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(p, final)
    except (OSError, *errors) as e:
        name = getattr(e, "filename", None)
        where = folder / Path(name).relative_to(tmp) if name and Path(name).is_relative_to(tmp) else name or folder
        raise WriteError(where, _first_line(e)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _first_line(e: BaseException) -> str:
    text = getattr(e, "strerror", None) or str(e)
    return next((line.strip() for line in text.splitlines() if line.strip()), type(e).__name__)
