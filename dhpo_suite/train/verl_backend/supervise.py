"""Running verl's driver to its end: signals passed on, and every process of the launch ended afterwards, even
when the launcher itself is killed.

`supervise(command)` runs `python -m verl.trainer.main_ppo ...` in its own session with an environment marker
(`RUN_MARKER`) that every process of the launch inherits (the driver, the Ray instance it starts, Ray's
workers), passes SIGTERM, SIGINT or SIGHUP on as SIGINT (verl's driver unwinds on it), kills what is left after
a grace period, and ends every process still carrying the marker once the driver is gone.

The job's life is the launcher's, however the launcher ends (SIGKILL, the OOM killer, a crash):

- a reaper (`python -m dhpo_suite.train.verl_backend.supervise`, its own session) reads a pipe only the
  launcher writes; end of file without the launcher's "done" means the launcher died: it gives the driver
  `grace` seconds, kills the driver's process group and every marked process, and closes the run's manifest
  as `failed`, naming the cause;
- the driver gets SIGINT when the launcher dies (Linux `PR_SET_PDEATHSIG`): it starts unwinding at once;
- the run directory's lock (`lock_fd`, runs/lock.py's flock) is shared with the reaper and the driver, so a
  relaunch on the same directory is refused until every holder of it has ended.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Callable, Sequence

__all__ = ["GRACE_SECONDS", "HANDLED", "RUN_MARKER", "end_marked_processes", "supervise"]

RUN_MARKER = "DHPO_SUITE_VERL_RUN"
"""Environment variable that every process of one launch inherits (verl's driver, Ray, its workers)."""
GRACE_SECONDS = 30.0
"""After SIGTERM/SIGINT, how long verl's driver gets to stop its Ray job before everything is killed."""

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals that stop a launch cleanly (SIGHUP: the terminal closed)."""


def supervise(command: Sequence[str], grace: float = GRACE_SECONDS, env: dict[str, str] | None = None,
              lock_fd: int | None = None, run_dir: Path | None = None) -> tuple[int, int | None]:
    """Run verl's driver to its end (module docstring); (exit code, the signal that stopped it or None).

    On SIGINT verl's driver unwinds: its `finally` closes TransferQueue, Ray shuts down at exit. `env`: added
    to the driver's. `lock_fd`: the run directory's lock, held by the driver and the reaper too. `run_dir`: the
    run whose manifest the reaper closes if the launcher dies.
    """
    marker = uuid.uuid4().hex
    in_main = threading.current_thread() is threading.main_thread()
    reaper = _start_reaper(marker, grace, lock_fd, run_dir)
    keep = (lock_fd,) if lock_fd is not None else ()
    proc = subprocess.Popen(list(command), env={**os.environ, **(env or {}), RUN_MARKER: marker},
                            start_new_session=True, pass_fds=keep, preexec_fn=_dies_with_parent() if in_main else None)
    _tell(reaper.stdin, f"driver {proc.pid}")
    stopped: list[int] = []

    def on_signal(signum, frame):
        if not stopped:
            stopped.append(signum)
            _signal(proc.pid, signal.SIGINT)

    handled = HANDLED if in_main else ()
    previous = {s: signal.signal(s, on_signal) for s in handled}  # signals reach the main thread only
    deadline = None
    try:
        while True:
            try:
                code = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if stopped:
                    deadline = deadline or time.monotonic() + grace
                    if time.monotonic() > deadline:  # the driver did not stop in time
                        _signal(-proc.pid, signal.SIGKILL)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        end_marked_processes(marker)
        _tell(reaper.stdin, "done")  # the launcher saw the job end: nothing for the reaper to do
        with contextlib.suppress(subprocess.TimeoutExpired):
            reaper.wait(timeout=30)
    return code, (stopped[0] if stopped else None)


def _tell(pipe: IO[str] | None, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        assert pipe is not None
        pipe.write(line + "\n")
        pipe.flush()
        if line == "done":
            pipe.close()


def _dies_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that asks Linux to send the child SIGINT when its parent dies (None elsewhere). Only for a
    child started from the main thread: the signal follows the thread that forked it."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)  # loaded here: not in the forked child
    pr_set_pdeathsig = 1

    def preexec() -> None:
        libc.prctl(pr_set_pdeathsig, int(signal.SIGINT), 0, 0, 0)

    return preexec


def _start_reaper(marker: str, grace: float, lock_fd: int | None, run_dir: Path | None) -> subprocess.Popen:
    """The reaper process (module docstring), in its own session, holding the run directory's lock too."""
    args = [sys.executable, "-m", "dhpo_suite.train.verl_backend.supervise", marker, str(grace), str(os.getpid()),
            str(run_dir or "")]
    keep = (lock_fd,) if lock_fd is not None else ()
    return subprocess.Popen(args, stdin=subprocess.PIPE, text=True, start_new_session=True, pass_fds=keep,
                            stdout=subprocess.DEVNULL)


def reap(marker: str, grace: float, launcher: int, run_dir: str, lines: IO[str]) -> bool:
    """The reaper's work: wait for the launcher's "done"; without it (the launcher died), end the job and close
    its manifest. True when it had to end the job."""
    driver = None
    for line in lines:
        word, _, value = line.strip().partition(" ")
        if word == "driver":
            driver = int(value)
        elif word == "done":
            return False
    if driver is not None:  # the driver got SIGINT as the launcher died (PR_SET_PDEATHSIG): time to unwind
        deadline = time.monotonic() + grace
        while _alive(driver) and time.monotonic() < deadline:
            time.sleep(0.5)
        _signal(-driver, signal.SIGKILL)  # its session's process group: what is left of it
    end_marked_processes(marker)
    if run_dir:
        _close_as_failed(Path(run_dir), f"the launcher (pid {launcher}) ended without closing the run (killed: "
                                        "SIGKILL or the OOM killer?); verl's driver and its Ray processes were ended")
    return True


def _alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _close_as_failed(run_dir: Path, cause: str) -> None:
    """Close a run's manifest as `failed` with `cause`. Only the launcher closes a launched run for good; what a
    worker's writer recorded as it exited ("the process exited without closing the run") is replaced."""
    from dhpo_suite.runs import RunWriter, read_manifest
    from dhpo_suite.runs.format import manifest_path

    if not manifest_path(run_dir).exists() or read_manifest(run_dir).status == "completed":
        return
    RunWriter(run_dir, read_manifest(run_dir), resume=True).close("failed", cause)


def _signal(pid: int, sig: int) -> None:
    """os.kill, or os.killpg for a negative pid; a process that is already gone is fine."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(-pid, sig) if pid < 0 else os.kill(pid, sig)


def end_marked_processes(marker: str, wait: float = 10.0) -> None:
    """SIGTERM every live process whose environment holds RUN_MARKER=marker, SIGKILL those alive `wait` seconds
    later."""
    import psutil

    gone = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError)
    procs = []
    for p in psutil.process_iter():
        with contextlib.suppress(*gone):
            if p.environ().get(RUN_MARKER) == marker:
                procs.append(p)
    for p in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.terminate()
    _, alive = psutil.wait_procs(procs, timeout=wait)
    for p in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.kill()
    psutil.wait_procs(alive, timeout=wait)


if __name__ == "__main__":  # the reaper: supervise.py MARKER GRACE LAUNCHER_PID RUN_DIR, the launcher's pipe on stdin
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the launcher's to handle
    reap(sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.stdin)
