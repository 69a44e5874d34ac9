"""GraderPool: reusable sandboxed worker processes with a hard wall-clock limit per item.

The parent only dispatches items and collects verdicts; it never imports math-verify or sympy. Each item
gets `timeout` seconds of wall clock from the moment a ready worker receives it; a worker that runs
past it is killed (SIGKILL) and replaced, and the item's verdict has status "timeout". A worker that
dies (segfault, OOM kill) gives status "error" and is replaced too. Workers are forked from a
forkserver that has already imported math-verify with antlr4 4.13.2 (see `preload.py`, `runtime.py`),
so starting or replacing one takes milliseconds, and no state of the parent (threads, torch,
antlr4 4.9.3) leaks into it.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait

from dhpo_suite.grading import runtime, worker
from dhpo_suite.grading.items import Item, coerce_items
from dhpo_suite.grading.launch import WorkerProcess
from dhpo_suite.grading.verdict import Verdict

__all__ = ["GraderPool"]

Progress = Callable[[int, int], None]
_PRELOAD = "dhpo_suite.grading.preload"
_START_TIMEOUT_S = 120.0  # a cold worker imports sympy; on a loaded 2-core machine that can be slow
_MAX_START_FAILURES = 3


@dataclass
class _Slot:
    """One worker process and the job it is running (index into the batch, deadline)."""

    process: multiprocessing.process.BaseProcess
    conn: object
    started: float
    ready: bool = False
    job: int | None = None
    deadline: float = 0.0
    extracted: tuple = (None, None, None)  # (answer, answer_source, answer_rule) the worker reported


class GraderPool:
    """Sandboxed grading workers. Use as a context manager; `grade_many` keeps the input order.

    workers:     number of worker processes (one per free core is right).
    timeout:     wall-clock seconds per item before its worker is killed (status "timeout").
    memory_mb:   address-space limit of each worker (0 = none).
    start_method: "forkserver" (default; fast, clean) or "spawn".
    """

    def __init__(
        self, workers: int = 2, timeout: float = 5.0, *, memory_mb: int = 3072,
        start_method: str = "forkserver",
    ) -> None:
        if workers < 1:
            raise ValueError(f"GraderPool.workers must be >= 1, got {workers}")
        if not timeout > 0:
            raise ValueError(f"GraderPool.timeout must be > 0 seconds, got {timeout}")
        if multiprocessing.current_process().daemon:
            raise RuntimeError(
                "GraderPool cannot start worker processes from a daemonic process (e.g. a "
                "multiprocessing.Pool worker); create the pool in the parent and pass it the items"
            )
        runtime.warn_if_missing()
        self.timeout = float(timeout)
        self.memory_mb = memory_mb
        self._ctx = multiprocessing.get_context(start_method)
        if start_method == "forkserver":
            self._ctx.set_forkserver_preload([_PRELOAD])
        self._lock = threading.Lock()
        self._owner = os.getpid()
        self.stats = {"graded": 0, "timeouts": 0, "errors": 0, "restarts": 0}
        self._start_failures = 0
        self._slots: list[_Slot] = [self._start() for _ in range(workers)]

    # ----------------------------------------------------------------- public
    def grade(self, response: str, gold: str | Sequence[str], bench: str | None = None,
              *, timeout: float | None = None) -> Verdict:
        """Grade one response against a gold string or a list of accepted golds."""
        return self.grade_many([(response, gold, bench)], timeout=timeout)[0]

    def grade_many(self, items: Iterable, *, progress: Progress | None = None,
                   timeout: float | None = None) -> list[Verdict]:
        """Verdicts for `items` ((response, gold(s)[, bench]) tuples or dicts), in input order;
        progress(done, total) is called after each finished item."""
        jobs = coerce_items(items)
        with self._lock:
            self._check_owner()
            try:
                return self._run(jobs, progress, float(timeout or self.timeout))
            except BaseException:
                self._abandon()  # e.g. a raising progress callback or Ctrl-C: no stale results later
                raise

    def runtime_info(self) -> list[dict]:
        """Per worker: antlr4 version and file it really imported, the `198\\%` probe, pid, CPU seconds."""
        with self._lock:
            self._check_owner()
            return [self._ask(index, "info", None) for index in range(len(self._slots))]

    def close(self) -> None:
        """Stop every worker (politely, then by force)."""
        for slot in getattr(self, "_slots", []):
            self._stop(slot, polite=True)
        self._slots = []

    def __enter__(self) -> GraderPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---------------------------------------------------------- event loop
    def _run(self, jobs: list[Item], progress: Progress | None, limit: float) -> list[Verdict]:
        results: list[Verdict | None] = [None] * len(jobs)
        queue = deque(range(len(jobs)))
        done = 0
        while done < len(jobs):
            self._dispatch(queue, jobs, limit)
            ready = wait(self._waitables(), timeout=self._wait_time())
            finished = self._collect(ready) + self._expire(limit)
            for index, verdict in finished:
                results[index] = verdict
                done += 1
                self._count(verdict)
                if progress is not None:
                    progress(done, len(jobs))
        return results  # type: ignore[return-value]

    def _dispatch(self, queue: deque, jobs: list[Item], limit: float) -> None:
        for slot in self._slots:
            if queue and slot.ready and slot.job is None:
                index = queue.popleft()
                slot.job, slot.deadline = index, time.monotonic() + limit  # the clock covers the send
                slot.extracted = (None, None)
                slot.conn.send((index, "grade", jobs[index].payload()))

    def _waitables(self) -> list:
        return [w for slot in self._slots for w in (slot.conn, slot.process.sentinel)]

    def _wait_time(self) -> float:
        now = time.monotonic()
        deadlines = [s.deadline for s in self._slots if s.job is not None]
        deadlines += [s.started + _START_TIMEOUT_S for s in self._slots if not s.ready]
        return max(0.0, min(deadlines) - now) if deadlines else _START_TIMEOUT_S

    def _collect(self, ready: list) -> list[tuple[int, Verdict]]:
        finished = []
        for number, slot in enumerate(self._slots):
            if slot.conn not in ready and slot.process.sentinel not in ready:
                continue
            try:
                message = slot.conn.recv() if slot.conn.poll() else None
            except (EOFError, OSError):
                message = None
            if message is None:  # the process died
                finished += self._replace_dead(number)
            elif message[0] == "ready":
                slot.ready, self._start_failures = True, 0
            elif message[0] == "failed":
                self._start_failed(number, message[1])
            elif message[0] == "extracted" and message[1] == slot.job:
                slot.extracted = tuple(message[2:5])
            elif message[0] == slot.job:
                finished.append((slot.job, Verdict(*message[1])))
                slot.job = None
        return finished

    def _expire(self, limit: float) -> list[tuple[int, Verdict]]:
        finished, now = [], time.monotonic()
        for number, slot in enumerate(self._slots):
            if slot.job is not None and now >= slot.deadline:
                index, pid = slot.job, slot.process.pid
                reason = f"grading exceeded {limit:g} s wall clock; worker {pid} killed and replaced"
                finished.append((index, Verdict(False, slot.extracted[0], "timeout", reason, *slot.extracted[1:])))
                self._restart(number)
            elif not slot.ready and now >= slot.started + _START_TIMEOUT_S:
                self._start_failed(number, f"no ready message within {_START_TIMEOUT_S:g} s")
        return finished

    # ------------------------------------------------------------ workers
    def _start(self) -> _Slot:
        parent, child = self._ctx.Pipe(duplex=True)
        make = WorkerProcess if self._ctx.get_start_method() == "forkserver" else self._ctx.Process
        process = make(target=worker.serve, args=(child, self.memory_mb), daemon=True, name="dhpo-grader")
        process.start()
        child.close()
        return _Slot(process, parent, time.monotonic())

    def _restart(self, number: int) -> None:
        """Kill worker `number` (if still alive) and start a fresh one in its place."""
        self._stop(self._slots[number], polite=False)
        self.stats["restarts"] += 1
        self._slots[number] = self._start()

    def _stop(self, slot: _Slot, polite: bool) -> None:
        if polite and slot.process.is_alive():
            try:
                slot.conn.send(None)
            except (OSError, ValueError):
                pass
            slot.process.join(timeout=1.0)
        if slot.process.is_alive():
            slot.process.kill()
        slot.process.join(timeout=5.0)
        slot.conn.close()

    def _replace_dead(self, number: int) -> list[tuple[int, Verdict]]:
        slot = self._slots[number]
        slot.process.join(timeout=5.0)
        code = slot.process.exitcode
        finished = []
        if slot.job is not None:
            reason = f"worker {slot.process.pid} died (exit code {code}) while grading; replaced"
            finished.append((slot.job, Verdict(False, slot.extracted[0], "error", reason, *slot.extracted[1:])))
        elif not slot.ready:
            self._start_failed(number, f"worker exited with code {code} during start-up")
            return finished
        self._restart(number)
        return finished

    def _start_failed(self, number: int, detail: str) -> None:
        self._start_failures += 1
        if self._start_failures >= _MAX_START_FAILURES:
            self._stop(self._slots[number], polite=False)
            self.close()
            raise RuntimeError(f"dhpo_suite.grading: grader workers fail to start:\n{detail}")
        self._restart(number)

    def _ask(self, number: int, op: str, payload) -> dict:
        """One request to one worker outside the event loop (diagnostics only)."""
        slot = self._slots[number]
        while not slot.ready:
            self._collect(wait(self._waitables(), timeout=_START_TIMEOUT_S))
            slot = self._slots[number]
        slot.conn.send((-1, op, payload))
        if not slot.conn.poll(max(self.timeout, 30.0)):
            raise TimeoutError(f"grader worker {slot.process.pid} did not answer {op!r}")
        return slot.conn.recv()[1]

    def _abandon(self) -> None:
        """Replace every worker still busy with an item of an interrupted batch."""
        for number, slot in enumerate(self._slots):
            if slot.job is not None:
                self._restart(number)

    def _count(self, verdict: Verdict) -> None:
        self.stats["graded"] += 1
        self.stats["timeouts"] += verdict.status == "timeout"
        self.stats["errors"] += verdict.status == "error"

    def _check_owner(self) -> None:
        if os.getpid() != self._owner:
            raise RuntimeError("GraderPool was created in another process (fork); create a new one")
        if not self._slots:
            raise RuntimeError("GraderPool is closed")
