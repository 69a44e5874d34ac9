"""Grading and storing finished samples on one background thread, so generation never waits for them.

`GradingThread` owns the grader pool: it is started on the thread (its worker start-up, ~seconds, overlaps
the first generation steps) and closed there. `Sink` collects finished problems and hands them to the thread
every `max_delay` seconds (or sooner, at `batch_size` samples), whatever the batch size: the thread grades
them (`GraderPool.grade_many`) and appends them, flushed at once and fsynced at most every second. So a
finished sample reaches the file within about a second and a SIGKILL loses the requests still in the
engine, not the finished ones waiting for a full batch.
"""

from __future__ import annotations

import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from dhpo_suite.grading import GraderPool
from dhpo_suite.grading.items import Item
from dhpo_suite.runs import eval_results as er

__all__ = ["GradingThread", "Sink", "sample_records", "skipped_records"]

MAX_DELAY = 0.5
"""Seconds a finished sample may wait before it is handed to the grading thread."""
_MAX_QUEUED = 8
"""Batches queued on the grading thread before generation waits for it (bounds memory if grading lags)."""


class GradingThread:
    """One worker thread and the grader pool it owns (workers, per-sample timeout in seconds)."""

    def __init__(self, workers: int, timeout: float):
        self._ex = ThreadPoolExecutor(1, thread_name_prefix="dhpo-grade")
        self._pool = None
        self._started = self._ex.submit(self._start, workers, timeout)

    def _start(self, workers: int, timeout: float) -> None:
        self._pool = GraderPool(workers=workers, timeout=timeout).__enter__()

    def grade(self, items: list[Item]):
        """Items (response, golds, bench, truncated, problem) -> Verdicts, in order. Call on the thread (inside a
        submitted job)."""
        self._started.result()  # re-raises a failed pool start-up
        return self._pool.grade_many(items)

    def submit(self, fn, *args) -> Future:
        return self._ex.submit(fn, *args)

    def close(self) -> None:
        if self._pool is not None:
            self._ex.submit(self._pool.__exit__, None, None, None).result()
        self._ex.shutdown()

    def __enter__(self) -> "GradingThread":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def skipped_records(bench: str, problem, prompt: str, samples, status: str, reason: str) -> list[dict]:
    """Records of samples that were never generated (status `prompt_too_long` | `row_too_large`): graded
    incorrect, counted in the summary's `skipped`, kept on --resume."""
    return [{"bench": bench, "problem_id": problem.id, "sample": s, "prompt": prompt, "problem": problem.problem,
             "response": "",
             "n_tokens": 0, "finish_reason": "skipped", "gold": list(problem.gold), "extracted": None,
             "answer_source": None, "correct": False, "status": status, "reason": reason} for s in samples]


def sample_records(bench: str, problem, prompt: str, completions, verdicts) -> list[dict]:
    """One record per sample (dhpo_suite.runs.eval_results.SAMPLE_FIELDS)."""
    return [{"bench": bench, "problem_id": problem.id, "sample": c.sample, "prompt": prompt,
             "problem": problem.problem, "response": c.text, "n_tokens": c.n_tokens, "finish_reason": c.finish_reason,
             "gold": list(problem.gold), "extracted": v.extracted,
             "answer_source": v.answer_source, "correct": bool(v.correct), "status": v.status, "reason": v.reason}
            for c, v in zip(completions, verdicts)]


class Sink:
    """Collects finished problems of one benchmark and stores them through `grading` into `writer`.

    `bench`: its name; `grader`: the grader policy name; `batch_size`: samples handed over at once at most;
    `max_delay`: seconds a finished sample waits at most before it is handed over (`tick()` checks, after every
    engine step)."""

    def __init__(self, grading: GradingThread, writer: er.SampleWriter, on_written: Callable[[int, int], None], *,
                 bench: str, grader: str | None, batch_size: int, max_delay: float = MAX_DELAY):
        self.grading, self.writer, self.on_written = grading, writer, on_written
        self.bench, self.grader = bench, grader
        self.batch_size, self.max_delay = batch_size, max_delay
        self.batch: list[tuple] = []
        self.size = 0  # samples in the current batch
        self._since = 0.0  # when the current batch's first problem arrived
        self._queued: deque[Future] = deque()

    def add(self, problem, prompt: str, completions) -> None:
        if not self.batch:
            self._since = time.monotonic()
        self.batch.append((problem, prompt, completions))
        self.size += len(completions)
        self.tick()

    def store_skipped(self, records: list[dict]) -> None:
        """Append records that need no grading (skipped samples), in order with the graded ones."""
        self.flush()
        self._queue(self.grading.submit(self._write, records))

    def tick(self) -> None:
        """Hand the batch over if it is full or its oldest sample has waited `max_delay` seconds."""
        if self.batch and (self.size >= self.batch_size or time.monotonic() - self._since >= self.max_delay):
            self.flush()
        while self._queued and self._queued[0].done():
            self._queued.popleft().result()  # re-raises a grading/writing error here

    def flush(self) -> None:
        """Hand the current batch to the grading thread (which stores batches in order)."""
        if not self.batch:
            return
        batch, self.batch, self.size = self.batch, [], 0
        self._queue(self.grading.submit(self._store, batch))

    def _queue(self, future: Future) -> None:
        self._queued.append(future)
        while len(self._queued) > _MAX_QUEUED:  # grading lags generation: wait rather than pile up
            self._queued.popleft().result()

    def _store(self, batch) -> None:
        # A response cut at the token budget is graded only on an answer it committed to before the cut, and a
        # restatement of the problem is no answer (grading/fallback.py): the grader gets both facts.
        verdicts = iter(self.grading.grade([
            Item(c.text, tuple(p.gold), self.grader, truncated=c.finish_reason == "length", problem=p.problem)
            for p, _, cs in batch for c in cs]))
        self._write([r for p, prompt, cs in batch
                     for r in sample_records(self.bench, p, prompt, cs, [next(verdicts) for _ in cs])])

    def _write(self, records: list[dict]) -> None:
        self.writer.write_batch(records)
        self.on_written(len(records), sum(r["n_tokens"] for r in records))

    def close(self) -> None:
        self.flush()
        while self._queued:
            self._queued.popleft().result()
