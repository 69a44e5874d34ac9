"""Running verl's driver to its end: signals passed on, and every process of the launch ended afterwards.

`supervise(command)` runs `python -m verl.trainer.main_ppo ...` in its own session with an environment marker
(`RUN_MARKER`) that every process of the launch inherits (the driver, the Ray instance it starts, Ray's
workers), passes SIGTERM, SIGINT or SIGHUP on as SIGINT (verl's driver unwinds on it), kills what is left after
a grace period, and ends every process still carrying the marker once the driver is gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import uuid
from typing import Sequence

__all__ = ["GRACE_SECONDS", "HANDLED", "RUN_MARKER", "end_marked_processes", "marked_processes", "supervise"]

RUN_MARKER = "DHPO_SUITE_VERL_RUN"
"""Environment variable that every process of one launch inherits (verl's driver, Ray, its workers)."""
GRACE_SECONDS = 30.0
"""After SIGTERM/SIGINT, how long verl's driver gets to stop its Ray job before everything is killed."""

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals that stop a launch cleanly (SIGHUP: the terminal closed)."""


def supervise(command: Sequence[str], grace: float = GRACE_SECONDS,
              env: dict[str, str] | None = None) -> tuple[int, int | None]:
    """Run verl's driver to its end; (exit code, the signal that stopped it or None).

    The driver runs in its own session with `RUN_MARKER` set, so every process of the launch (the driver,
    the Ray instance it starts, Ray's workers) carries the marker. SIGTERM, SIGINT or SIGHUP to this process
    is passed on as SIGINT, on which verl's driver unwinds (its `finally` closes TransferQueue, Ray shuts
    down at exit); after `grace` seconds whatever is left is killed. In every case, processes still carrying
    the marker once the driver is gone are ended (SIGTERM, then SIGKILL). `env`: added to the driver's.
    """
    marker = uuid.uuid4().hex
    proc = subprocess.Popen(list(command), env={**os.environ, **(env or {}), RUN_MARKER: marker},
                            start_new_session=True)
    stopped: list[int] = []

    def on_signal(signum, frame):
        if not stopped:
            stopped.append(signum)
            _signal(proc.pid, signal.SIGINT)

    handled = HANDLED if threading.current_thread() is threading.main_thread() else ()
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
    return code, (stopped[0] if stopped else None)


def _signal(pid: int, sig: int) -> None:
    """os.kill, or os.killpg for a negative pid; a process that is already gone is fine."""
    try:
        os.killpg(-pid, sig) if pid < 0 else os.kill(pid, sig)
    except ProcessLookupError:
        pass


def marked_processes(marker: str) -> list:
    """Live processes whose environment holds RUN_MARKER=marker (psutil.Process list)."""
    import psutil

    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(RUN_MARKER) == marker:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def end_marked_processes(marker: str, wait: float = 10.0) -> None:
    """SIGTERM every process of the launch `marker`, SIGKILL those alive `wait` seconds later."""
    import psutil

    procs = marked_processes(marker)
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=wait)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=wait)
