"""Running verl's driver to its end: signals passed on, and every process of the launch ended afterwards.

`supervise(command)` runs `python -m verl.trainer.main_ppo ...` in its own session with an environment marker
(`RUN_MARKER`) that every process of the launch inherits (the driver, the Ray instance it starts, Ray's
workers), passes SIGTERM, SIGINT or SIGHUP on as SIGINT (verl's driver unwinds on it), kills what is left after
a grace period, and ends every process still carrying the marker once the driver is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
import uuid
from typing import Sequence

__all__ = ["GRACE_SECONDS", "HANDLED", "RUN_MARKER", "end_marked_processes", "supervise"]

RUN_MARKER = "DHPO_SUITE_VERL_RUN"
"""Environment variable that every process of one launch inherits (verl's driver, Ray, its workers)."""
GRACE_SECONDS = 30.0
"""After SIGTERM/SIGINT, how long verl's driver gets to stop its Ray job before everything is killed."""

HANDLED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
"""Signals that stop a launch cleanly (SIGHUP: the terminal closed)."""


def supervise(command: Sequence[str], grace: float = GRACE_SECONDS,
              env: dict[str, str] | None = None) -> tuple[int, int | None]:
    """Run verl's driver to its end (module docstring); (exit code, the signal that stopped it or None).

    On SIGINT verl's driver unwinds: its `finally` closes TransferQueue, Ray shuts down at exit. `env`: added
    to the driver's.
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
