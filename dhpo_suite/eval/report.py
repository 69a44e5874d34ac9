"""Rich tables of evaluation summaries (the paper's Table 1 layout) and progress bars."""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from dhpo_suite.eval.benchmarks import paper_order

__all__ = ["headline_table", "detail_table", "progress_bars", "progress_lines", "PROGRESS_SECONDS_ENV"]


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def headline_table(rows: dict[str, dict], title: str = "Accuracy (%), headline per benchmark"):
    """One row per model/checkpoint, one column per benchmark (its headline, e.g. avg@32) and AVG."""
    benches = paper_order(b for s in rows.values() for b in s["benchmarks"])
    table = Table(title=title)
    table.add_column("model")
    for b in benches:
        heads = {s["benchmarks"][b]["headline"] for s in rows.values() if b in s["benchmarks"]}
        table.add_column(f"{b}\n{'/'.join(sorted(heads))}", justify="right")
    table.add_column("AVG", justify="right", style="bold")
    for label, s in rows.items():
        cells = [_pct(s["benchmarks"][b][s["benchmarks"][b]["headline"]]) if b in s["benchmarks"] else "-"
                 for b in benches]
        table.add_row(label, *cells, _pct(s["AVG"]))
    return table


def detail_table(summary: dict, title: str = "Details"):
    """Per benchmark: headline, best pass@k and maj@k, lengths, truncation and boxed rates, grader trouble,
    samples skipped (never generated)."""
    table = Table(title=title)
    for col in ("bench", "P", "n", "avg@n", "pass@n", "maj@n", "len", "len med", "trunc", "boxed", "t/o", "err",
                "skip"):
        table.add_column(col, justify="left" if col == "bench" else "right", no_wrap=True)
    for b in paper_order(summary["benchmarks"]):
        m = summary["benchmarks"][b]
        k = max((int(key.split("@")[1]) for key in m if key.startswith("pass@")), default=1)
        table.add_row(b, str(m["n_problems"]), str(m["n_samples"]), _pct(m[m['headline']]),
                      _pct(m.get(f"pass@{k}", 0.0)), _pct(m.get(f"maj@{k}", 0.0)), f"{m['len_mean']:.0f}",
                      f"{m['len_median']:.0f}", _pct(m["trunc_rate"]), _pct(m["boxed_rate"]),
                      str(m["grader_timeouts"]), str(m["grader_errors"]), str(m.get("skipped", 0)))
    return table


PROGRESS_SECONDS_ENV = "DHPO_EVAL_PROGRESS_SECONDS"
"""Seconds between plain progress lines when stderr is not a terminal (default 30)."""


class _Figures:
    """One benchmark's progress: samples done of total, response tokens per second and the ETA, counted from the
    samples this invocation stored (a resumed run's earlier samples are not in the rate)."""

    def __init__(self, name: str, total: int, done: int):
        self.name, self.total, self.done, self.start_done = name, total, done, done
        self.tokens, self.t0 = 0, time.monotonic()
        self.lock = threading.Lock()

    def add(self, k: int, tokens: int) -> None:
        with self.lock:
            self.done += k
            self.tokens += tokens

    def rate(self) -> str:
        return f"{self.tokens / max(time.monotonic() - self.t0, 1e-9):.0f} tokens/s"

    def eta(self) -> str:
        new, left = self.done - self.start_done, self.total - self.done
        if left <= 0:
            return "done"
        if new <= 0:
            return "ETA ?"
        seconds = int(left * (time.monotonic() - self.t0) / new)
        return f"ETA {seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"

    def line(self) -> str:
        with self.lock:
            return f"{self.name}: {self.done}/{self.total} samples, {self.rate()}, {self.eta()}"


@contextmanager
def progress_bars(console=None) -> Iterator:
    """Yields `progress(name, total, done) -> advance(k, tokens)`: one rich bar per benchmark (samples done/total,
    tokens/s, ETA) on a terminal; else (a log file, nohup, SLURM) the same figures as one plain line every
    DHPO_EVAL_PROGRESS_SECONDS (30) seconds and at each benchmark's end."""
    if console is not None and not console.is_terminal:
        with progress_lines(console.file, float(os.environ.get(PROGRESS_SECONDS_ENV) or 30)) as start:
            yield start
        return
    bars = Progress(TextColumn("{task.description:>14}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("samples {task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn(),
                    console=console)

    def start(name: str, total: int, done: int):
        figures = _Figures(name, total, done)
        task = bars.add_task(name, total=total, completed=done, rate="")

        def advance(k: int, tokens: int = 0) -> None:
            figures.add(k, tokens)
            bars.update(task, advance=k, rate=figures.rate())
        return advance

    with bars:
        yield start


@contextmanager
def progress_lines(stream, interval: float) -> Iterator:
    """`progress(name, total, done) -> advance(k, tokens)` writing plain lines to `stream`: every `interval`
    seconds for the benchmark under way (from a timer thread: a line comes even while no sample finishes), and
    one when a benchmark's last sample is stored."""
    active: list[_Figures] = []
    stop = threading.Event()

    def emit(figures: _Figures) -> None:
        stream.write(figures.line() + "\n")
        stream.flush()

    def tick() -> None:
        while not stop.wait(interval):
            for figures in list(active):
                emit(figures)

    def start(name: str, total: int, done: int):
        figures = _Figures(name, total, done)
        active[:] = [figures]
        if done >= total:
            emit(figures)

        def advance(k: int, tokens: int = 0) -> None:
            figures.add(k, tokens)
            if figures.done >= total and figures in active:
                active.remove(figures)
                emit(figures)
        return advance

    timer = threading.Thread(target=tick, name="dhpo-progress", daemon=True)
    timer.start()
    try:
        yield start
    finally:
        stop.set()
        timer.join()
