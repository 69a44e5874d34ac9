"""Grading and storing finished samples on one background thread, so generation never waits for them.

`GradingThread` owns the grader pool: it is started on the thread (its worker start-up, ~seconds, overlaps
the first generation steps) and closed there. `Sink` collects finished problems into batches and hands each
batch to the thread, which grades it (`GraderPool.grade_many`) and appends it with one fsync. At most one
batch is being graded while the next one fills, which bounds what a SIGKILL can lose.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable

from dhpo_suite.runs import eval_results as er

__all__ = ["GradingThread", "Sink", "sample_records"]


class GradingThread:
    """One worker thread and the grader pool it owns (workers, per-sample timeout in seconds)."""

    def __init__(self, workers: int, timeout: float):
        self._ex = ThreadPoolExecutor(1, thread_name_prefix="dhpo-grade")
        self._pool = None
        self._started = self._ex.submit(self._start, workers, timeout)

    def _start(self, workers: int, timeout: float) -> None:
        from dhpo_suite.grading import GraderPool

        self._pool = GraderPool(workers=workers, timeout=timeout).__enter__()

    def grade(self, items: list[tuple[str, list[str], str]]):
        """(response, golds, bench) -> Verdicts, in order. Call on the thread (inside a submitted job)."""
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


def sample_records(bench: str, problem, prompt: str, completions, verdicts) -> list[dict]:
    """One record per sample (dhpo_suite.runs.eval_results.SAMPLE_FIELDS)."""
    return [{"bench": bench, "problem_id": problem.id, "sample": c.sample, "prompt": prompt,
             "response": c.text, "n_tokens": c.n_tokens, "finish_reason": c.finish_reason,
             "gold": list(problem.gold), "extracted": v.extracted, "correct": bool(v.correct),
             "status": v.status, "reason": v.reason} for c, v in zip(completions, verdicts)]


class Sink:
    """Batches finished problems of one benchmark and stores them through `grading` into `writer`."""

    def __init__(self, grading: GradingThread, writer: er.SampleWriter, on_written: Callable[[int], None]):
        self.grading, self.writer, self.on_written = grading, writer, on_written
        self.batch: list[tuple] = []
        self.size = 0  # samples in the current batch
        self._last: Future | None = None

    def add(self, bench: str, problem, prompt: str, completions) -> None:
        self.batch.append((bench, problem, prompt, completions))
        self.size += len(completions)

    def flush(self) -> None:
        """Hand the current batch to the thread, after the previous one is stored (bounded loss on a kill)."""
        if not self.batch:
            return
        batch, self.batch, self.size = self.batch, [], 0
        self.wait()
        self._last = self.grading.submit(self._store, batch)

    def _store(self, batch) -> None:
        verdicts = iter(self.grading.grade([(c.text, list(p.gold), b) for b, p, _, cs in batch for c in cs]))
        records = [r for b, p, prompt, cs in batch
                   for r in sample_records(b, p, prompt, cs, [next(verdicts) for _ in cs])]
        self.writer.write_batch(records)
        self.on_written(len(records))

    def wait(self) -> None:
        if self._last is not None:
            self._last.result()  # re-raises a grading/writing error here
            self._last = None

    def close(self) -> None:
        self.flush()
        self.wait()
