"""Comparing two evaluations (`dhpo-suite eval-compare A B`) and a run's checkpoints (`--run R`: a CSV).

Problems are the unit: both evaluations' samples of the same problem are paired. Per benchmark, each problem's
accuracy (its correct samples / its samples, each evaluation's own n) in A and in B; the difference B - A of
their means is avg@k(B) - avg@k(A) over the paired problems, with the paired t-interval (scipy.stats.t) of the
per-problem differences and the paired t-test's p. With one sample a problem in both, the test is the exact
McNemar test: the problems right in one and wrong in the other are a binomial(b + c, 1/2) under no difference
(scipy.stats.binomtest), two-sided.
"""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from scipy import stats

from dhpo_suite.runs import eval_results as er
from dhpo_suite.runs.safe_write import atomic_file
from dhpo_suite.science.stats import t_interval, t_test_p

__all__ = ["Paired", "paired_difference", "compare_dirs", "run_table", "write_csv"]


@dataclass(frozen=True)
class Paired:
    """B - A on one benchmark's paired problems."""

    bench: str
    problems: int
    """Problems in both evaluations."""
    avg_a: float
    avg_b: float
    diff: float
    low: float
    high: float
    """The difference's 95 % paired t-interval (problems as the unit)."""
    p: float
    test: str
    """"paired t" or "exact McNemar" (one sample a problem in both)."""


def _accuracy(eval_dir: Path, bench: str, n: int) -> dict[str, tuple[float, list[bool]]]:
    """{problem id: (accuracy over samples 0..n-1, their verdicts)} of one stored benchmark."""
    by: dict[str, list[bool]] = defaultdict(list)
    for r in er.read_bench_samples(eval_dir, bench).records:
        if r["sample"] < n:
            by[r["problem_id"]].append(bool(r["correct"]))
    return {pid: (sum(v) / len(v), v) for pid, v in by.items()}


def paired_difference(a: list[float], b: list[float], one_sample: bool = False, level: float = 0.95,
                      ) -> tuple[float, float, float, float, str]:
    """(mean of b - a, interval low, high, two-sided p, test) over paired per-problem accuracies; `one_sample`:
    0/1 accuracies of one sample each, tested by exact McNemar."""
    d = [y - x for x, y in zip(a, b)]
    mean = statistics.fmean(d)
    if len(d) < 2:
        return mean, float("nan"), float("nan"), float("nan"), "paired t"
    low, high = t_interval(d, level)  # science's one Student-t interval, the seeds' comparisons' too
    if one_sample:
        gained, lost = sum(x == 1 for x in d), sum(x == -1 for x in d)
        p = stats.binomtest(gained, gained + lost, 0.5).pvalue if gained + lost else 1.0
        return mean, low, high, float(p), "exact McNemar"
    return mean, low, high, t_test_p(d), "paired t"  # science's one t-test p (0.0 / 1.0 when sd is 0: see there)


def compare_dirs(a: Path | str, b: Path | str) -> list[Paired]:
    """Each benchmark both results directories hold, paired by problem id."""
    ca, cb = (er.read_json(Path(d) / er.CONFIG).get("benches", {}) for d in (a, b))
    out = []
    for bench in sorted(set(ca) & set(cb)):
        na, nb = ca[bench]["samples"], cb[bench]["samples"]
        acc_a, acc_b = _accuracy(Path(a), bench, na), _accuracy(Path(b), bench, nb)
        common = sorted(set(acc_a) & set(acc_b))
        if not common:
            continue
        xa, xb = [acc_a[p][0] for p in common], [acc_b[p][0] for p in common]
        diff, low, high, p, test = paired_difference(xa, xb, one_sample=na == nb == 1)
        out.append(Paired(bench, len(common), statistics.fmean(xa), statistics.fmean(xb), diff, low, high, p, test))
    return out


def run_table(run_dir: Path | str) -> list[dict]:
    """One row per (evaluated checkpoint, benchmark) of a run: avg@k and its standard error from summary.json,
    and the paired difference from the first evaluated checkpoint."""
    evals = er.list_checkpoint_evals(run_dir)
    rows, first = [], min(evals, default=None)
    for step, d in evals.items():
        summary = er.read_json(d / er.SUMMARY)
        vs_first = {c.bench: c for c in compare_dirs(evals[first], d)} if step != first else {}
        for bench, m in sorted(summary["benchmarks"].items()):
            head = m["headline"]
            c = vs_first.get(bench)
            rows.append({"step": step, "bench": bench, "metric": head, "value": m[head],
                         "se": m.get(f"{head}_se"), "n_problems": m["n_problems"], "n_samples": m["n_samples"],
                         "diff_vs_first": c.diff if c else None, "low": c.low if c else None,
                         "high": c.high if c else None, "p": c.p if c else None, "test": c.test if c else None})
    return rows


def write_csv(rows: list[dict], path: Path | str) -> None:
    """Through runs.safe_write like every other output: a full disk leaves no half-written CSV."""
    with atomic_file(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["step"])
        w.writeheader()
        w.writerows(rows)


def as_rows(pairs: list[Paired]) -> list[dict]:
    return [asdict(p) for p in pairs]
