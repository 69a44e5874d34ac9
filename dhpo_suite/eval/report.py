"""Rich tables of evaluation summaries (the paper's Table 1 layout) and progress bars."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from dhpo_suite.eval.benchmarks import paper_order

__all__ = ["headline_table", "detail_table", "progress_bars"]


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


@contextmanager
def progress_bars(console=None) -> Iterator:
    """Yields `progress(name, total, done) -> advance(k)` drawing one rich bar per benchmark."""
    bars = Progress(TextColumn("{task.description:>14}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("samples"), TimeElapsedColumn(), TimeRemainingColumn(), console=console)

    def start(name: str, total: int, done: int):
        task = bars.add_task(name, total=total, completed=done)
        return lambda k: bars.advance(task, k)

    with bars:
        yield start
