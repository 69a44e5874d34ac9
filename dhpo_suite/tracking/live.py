"""Mirrors beside a running trainer: a background thread, so a mirror can neither stop nor slow training.

The mirrors start before the first step: the trackers are imported in the caller's thread, and the caller
waits for the mirror thread to start them (at most `start_timeout`, 30 s: an online wandb.init without a
server waits on the network for its init timeout, and training goes on meanwhile). Both are Python work
holding the GIL, which beside a step slows it. The trainer calls `submit(record)` after the step is
committed to the run directory; that only puts the record on a bounded queue (microseconds); the daemon
thread logs each step. A mirror that fails (import error, bad credentials, no network, a full disk) is
reported once through `warn` and switched off; the others go on. If the thread falls behind by `queue_size`
steps, further steps are dropped (reported once): the run directory has them all, and `dhpo-suite export`
mirrors them afterwards.
"""

from __future__ import annotations

import queue
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from . import mirrors as registry

__all__ = ["LiveMirrors", "open_live"]

_STOP = object()


class LiveMirrors:
    """Mirror a run's steps while it trains. Use as a context manager around the training loop."""

    def __init__(self, run_dir: Path | str, manifest: Any, names: Sequence[str], *,
                 warn: Callable[[str], None], table_every: int = 10, queue_size: int = 64,
                 close_timeout: float = 120.0, start_timeout: float = 30.0,
                 make: Callable[[str], Any] | None = None):
        self.run_dir, self.manifest, self.names = Path(run_dir), manifest, tuple(names)
        self.warn, self.table_every, self.close_timeout = warn, int(table_every), close_timeout
        self._make = make or (lambda name: registry.build(name, self.run_dir))
        self._queue: queue.Queue = queue.Queue(maxsize=queue_size)
        self._warned: set[str] = set()
        self.dropped = 0
        self.submit_s = 0.0  # time spent in submit() by the training thread
        self.work_s = 0.0  # wall time the mirror thread spent logging steps
        self.work_cpu_s = 0.0  # CPU time of the mirror thread while logging steps
        self.start_s = self.start_cpu_s = 0.0  # wall / CPU time of the mirror thread starting the mirrors
        self.preload_s = 0.0  # wall time the caller spent importing and waiting for the start (<= start_timeout)
        self.active: list[Any] = []
        self._thread = threading.Thread(target=self._run, name="dhpo-suite-mirrors", daemon=True)
        t0 = time.perf_counter()
        for name in self.names if make is None else ():
            try:  # imports hold the GIL: pay them here, before training, not beside a step
                registry.preload(name)
            except ImportError:
                pass  # the mirror thread reports it (once) and goes on without this mirror
        self._started = threading.Event()
        if self.names:
            self._thread.start()
            # wandb.init is Python work too: let it finish before the first step, unless it waits on the
            # network (online, no server), which it then does on its own while training goes on.
            self._started.wait(start_timeout)
        self.preload_s = time.perf_counter() - t0

    def submit(self, record) -> None:
        """Hand a committed step to the mirrors; never blocks, never raises."""
        if not self.names:
            return
        t0 = time.perf_counter()
        try:
            self._queue.put_nowait(record)
        except queue.Full:
            self.dropped += 1
            self._warn_once("queue", f"mirrors fell {self._queue.maxsize} steps behind; step {record.step} and "
                                     f"later ones may be missing there (the run directory has them: "
                                     f"dhpo-suite export {self.run_dir} --to ...)")
        self.submit_s += time.perf_counter() - t0

    def close(self) -> None:
        """Let the thread log what is queued and close the mirrors (waits at most close_timeout seconds)."""
        if not self._thread.is_alive():
            return
        deadline = time.monotonic() + self.close_timeout
        while time.monotonic() < deadline:
            try:
                self._queue.put(_STOP, timeout=0.5)
                break
            except queue.Full:
                continue
        self._thread.join(max(0.0, deadline - time.monotonic()))
        if self._thread.is_alive():
            self._warn_once("close", f"mirrors did not finish within {self.close_timeout:.0f} s; left behind "
                                     f"(the run directory is complete)")

    def __enter__(self) -> "LiveMirrors":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- the mirror thread ----
    def _run(self) -> None:
        t0, c0 = time.perf_counter(), time.thread_time()
        for name in self.names:
            try:
                mirror = self._make(name)
                mirror.start(self.manifest)
                self.active.append(mirror)
            except BaseException as e:  # noqa: BLE001 - whatever a tracker raises, training goes on
                self._fail(name, e)
        self.start_s, self.start_cpu_s = time.perf_counter() - t0, time.thread_time() - c0
        self._started.set()
        while True:
            record = self._queue.get()
            if record is _STOP:
                break
            t0, c0 = time.perf_counter(), time.thread_time()
            samples = self.table_every > 0 and record.step % self.table_every == 0
            for mirror in list(self.active):
                try:
                    mirror.log_step(record, samples=samples)
                except BaseException as e:  # noqa: BLE001
                    self._drop(mirror, e)
            self.work_s += time.perf_counter() - t0
            self.work_cpu_s += time.thread_time() - c0
        for mirror in list(self.active):
            try:
                mirror.close()
            except BaseException as e:  # noqa: BLE001
                self._drop(mirror, e)

    def _drop(self, mirror, e: BaseException) -> None:
        self.active.remove(mirror)
        self._fail(mirror.name, e)

    def _fail(self, name: str, e: BaseException) -> None:
        hint = f"; install it: pip install {name}" if isinstance(e, ImportError) else ""
        self._warn_once(name, f"{name} mirror switched off: {type(e).__name__}: {_first_line(e)}{hint} (training "
                              f"goes on; the run directory is complete: dhpo-suite export {self.run_dir} --to {name})")

    def _warn_once(self, key: str, message: str) -> None:
        if key in self._warned:
            return
        self._warned.add(key)
        try:
            self.warn(f"warning: {message}")
        except Exception:  # noqa: BLE001 - a broken log sink must not stop the mirror thread either
            pass


def open_live(run_dir: Path | str, manifest: Any, spec: str | None, *, warn: Callable[[str], None],
              **kwargs) -> LiveMirrors:
    """LiveMirrors for a `--logger` value ("none" gives an inert one that does nothing)."""
    return LiveMirrors(run_dir, manifest, registry.parse_loggers(spec), warn=warn, **kwargs)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else "(no message)"
