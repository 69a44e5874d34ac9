"""One writer per directory: `with DirLock(run_dir): ...` around everything that writes a run or results dir.

The lock is `<dir>/.writer.lock`: an advisory `flock` held for the writer's lifetime, plus a JSON record of the
holder (pid, host, start time, command) so a refused second writer can say who holds it. The kernel drops a
`flock` when its process dies (SIGKILL included), so a lock left by a dead writer is stale by construction:
the next writer takes it over and says whose it was. The file itself is never deleted (deleting a locked file
lets two processes lock two different inodes of the same name); releasing empties the record instead.

A child process of the holder (the evaluator's per-checkpoint or data-parallel workers) writes under its
parent's lock: it finds the record naming its parent on this host and goes ahead without taking the lock.
`inherit=False` turns that off for a lock that must refuse its holder's own process tree too (a sweep: a second
`sweep` started from a run of the first is still a second sweep).

On a filesystem without `flock` (some network mounts) the record alone decides: a holder on this host that
is no longer running is stale; a live one, or one on another host (which cannot be checked from here), refuses.
"""

from __future__ import annotations

import errno
import json
import os
import platform
import sys
import time
from pathlib import Path

__all__ = ["LOCK_FILE", "DirLock", "LockHeld", "holder_of"]

LOCK_FILE = ".writer.lock"


class LockHeld(RuntimeError):
    """Another live writer holds the directory. The message names the directory and the holder; `holder` is the
    holder alone ("pid N on HOST since T, running `COMMAND`"), for a caller that words its own line."""

    def __init__(self, message: str, holder: str) -> None:
        super().__init__(message)
        self.holder = holder


def _record() -> dict:
    return {"pid": os.getpid(), "host": platform.node(), "since": time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                                              time.gmtime()),
            "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]])[:300]}


def _parse(text: str) -> dict | None:
    try:
        rec = json.loads(text)
    except ValueError:
        return None
    return rec if isinstance(rec, dict) and "pid" in rec else None


def holder_of(directory: Path | str) -> dict | None:
    """The holder record of `directory`'s lock file (None: no lock file, or released)."""
    try:
        return _parse((Path(directory) / LOCK_FILE).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def _describe(rec: dict | None) -> str:
    if not rec:
        return "another process"
    command = f", running `{rec['command']}`" if rec.get("command") else ""
    return f"pid {rec.get('pid')} on {rec.get('host') or '?'} since {rec.get('since') or '?'}{command}"


def _alive_here(rec: dict) -> bool:
    """Whether the record's process runs on this host (True when it cannot be told: another host)."""
    if rec.get("host") != platform.node():
        return True
    try:
        os.kill(int(rec["pid"]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, TypeError, OverflowError):
        pass
    return True


def _is_parent(rec: dict | None) -> bool:
    return rec is not None and rec.get("host") == platform.node() and rec.get("pid") == os.getppid()


class DirLock:
    """Exclusive writer lock of one directory (created if missing). Raises LockHeld when a live writer has it.

    `stale` is the record of a dead previous holder that was taken over (None when there was none), so the
    caller can say so in one line. `inherited` is True in a child of the holder (it writes under that lock);
    with `inherit=False` a child of the holder is refused like anyone else.
    """

    def __init__(self, directory: Path | str, create: bool = True, inherit: bool = True) -> None:
        self.directory = Path(directory)
        self.path = self.directory / LOCK_FILE
        self.create = create
        self.inherit = inherit
        self.stale: dict | None = None
        self.inherited = False
        self._fd: int | None = None

    def acquire(self) -> "DirLock":
        if self.create:
            self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            previous = _parse(os.pread(fd, 65536, 0).decode("utf-8", "replace"))
            if not self._flock(fd, previous):
                if self.inherit and _is_parent(previous):
                    self.inherited = True
                    os.close(fd)
                    return self
                holder = _describe(previous)
                raise LockHeld(f"{self.directory}: another writer is using it ({holder}); wait for it to finish, "
                               "or stop it", holder)
            if previous and previous.get("pid") != os.getpid():
                self.stale = previous  # its holder died without releasing (SIGKILL, power loss)
            data = json.dumps(_record()).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, data, 0)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def _flock(self, fd: int, previous: dict | None) -> bool:
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        except OSError as e:  # no flock on this filesystem: the record decides
            if e.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                raise
            return not (previous and _alive_here(previous))

    def fileno(self) -> int | None:
        """The locked file's descriptor (None when not held), for a child process that must hold the lock too
        (`subprocess.Popen(pass_fds=...)`: the flock lasts while any process holds the descriptor)."""
        return self._fd

    def release(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)  # released: an empty record is no holder
        except OSError:
            pass
        finally:
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> "DirLock":
        return self.acquire() if self._fd is None and not self.inherited else self

    def __exit__(self, *exc: object) -> None:
        self.release()
