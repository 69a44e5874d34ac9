"""Evaluation metrics: one namespace, one line of definition per name (mirrored in docs/eval.md).

Notation: a benchmark has P problems; problem p has n samples of which c_p are graded correct. Metrics are
computed from the stored sample records (dhpo_suite.runs.eval_results.SAMPLE_FIELDS), never from memory, so a
resumed or re-graded evaluation gives the same numbers as an uninterrupted one.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from math import comb
from typing import Iterable

from dhpo_suite.runs.eval_results import SKIP_STATUSES

__all__ = ["METRICS", "pass_at_k", "maj_at_k", "powers_of_two", "bench_metrics", "paper_average"]

METRICS = {
    "avg@k": "mean accuracy over all k samples of every problem, k = samples per problem (paper: Avg@32 AIME, "
             "Avg@4 AMC23, accuracy elsewhere); the benchmark's headline",
    "avg@k_se": "standard error of avg@k with problems as the unit: sample sd of the per-problem accuracies / "
                "sqrt(P) (0 for one problem)",
    "pass@k": "unbiased pass@k, mean over problems of 1 - C(n-c,k)/C(n,k) (Chen et al. 2021); k a power of two <= n",
    "maj@k": "majority vote over the extracted answers of samples 0..k-1 (no-answer samples do not vote); answers "
             "tied for most votes score the fraction of them that are correct; k a power of two <= n",
    "len_mean": "mean response length in tokens over ALL samples (truncated ones included)",
    "len_median": "median response length in tokens over ALL samples",
    "trunc_rate": "fraction of samples that hit the token limit (finish_reason == 'length')",
    "boxed_rate": "fraction of responses containing a \\boxed{...}",
    "grader_timeouts": "number of samples whose grading timed out (graded incorrect)",
    "grader_errors": "number of samples whose grading failed with an error (graded incorrect)",
    "skipped": "number of samples never generated (prompt longer than the context, row over the size limit); "
               "graded incorrect",
    "fallback_share": "fraction of samples whose answer the grader found only by its no-marker fallback (no "
                      "\\boxed{}, no answer line; docs/grading.md)",
    "n_problems": "problems evaluated",
    "n_samples": "samples per problem (k of avg@k)",
    "AVG": "the paper's average: mean over benchmarks of each benchmark's headline avg@k",
}


def powers_of_two(n: int) -> list[int]:
    """1, 2, 4, ... <= n."""
    return [1 << i for i in range(n.bit_length())] if n >= 1 else []


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem: 1 - C(n-c, k) / C(n, k) (exact integer arithmetic)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass_at_k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    return 1.0 - comb(n - c, k) / comb(n, k)


def maj_at_k(samples: list[tuple[str | None, bool]], k: int) -> float:
    """Majority vote over the first k (extracted answer, correct) pairs of one problem, in sample order.

    None answers abstain; with no votes the score is 0. Answers tied for the most votes score the fraction
    of them that are correct (the expected accuracy of breaking the tie uniformly at random).
    """
    votes = Counter(a for a, _ in samples[:k] if a is not None)
    if not votes:
        return 0.0
    top = max(votes.values())
    tied = [a for a, v in votes.items() if v == top]
    correct = {a for a, ok in samples[:k] if a is not None and ok}
    return sum(a in correct for a in tied) / len(tied)


def bench_metrics(records: list[dict], n: int) -> dict:
    """All metrics of one benchmark from its sample records (problems with fewer than n samples use what
    they have for avg/lengths and are left out of pass@k/maj@k; `complete` says whether all have n).
    Only samples 0..n-1 count, so avg@n and pass@k see the same samples after a resume with a smaller n."""
    records = [r for r in records if r["sample"] < n]
    by_problem: dict[str, list[dict]] = defaultdict(list)
    for r in records:
        by_problem[r["problem_id"]].append(r)
    groups = [sorted(rs, key=lambda r: r["sample"]) for rs in by_problem.values()]
    full = [g for g in groups if len(g) >= n]
    lengths = [r["n_tokens"] for r in records]
    accuracies = [_mean([r["correct"] for r in g]) for g in groups]
    out = {
        f"avg@{n}": _mean(accuracies),
        f"avg@{n}_se": statistics.stdev(accuracies) / len(accuracies) ** 0.5 if len(accuracies) > 1 else 0.0,
        "len_mean": _mean(lengths),
        "len_median": float(statistics.median(lengths)) if lengths else 0.0,
        "trunc_rate": _mean([r["finish_reason"] == "length" for r in records]),
        "boxed_rate": _mean(["\\boxed" in r["response"] for r in records]),
        "grader_timeouts": sum(r["status"] == "timeout" for r in records),
        "grader_errors": sum(r["status"] == "error" for r in records),
        "skipped": sum(r["status"] in SKIP_STATUSES for r in records),
        # answers the grader found only by its no-marker fallback (docs/grading.md): a format drift to watch
        "fallback_share": _mean([r.get("answer_source") == "fallback" for r in records]),
        "n_problems": len(groups),
        "n_samples": n,
        "complete": len(full) == len(groups),
    }
    for k in powers_of_two(n):
        out[f"pass@{k}"] = _mean([pass_at_k(n, sum(r["correct"] for r in g[:n]), k) for g in full])
        out[f"maj@{k}"] = _mean([maj_at_k([(r["extracted"], r["correct"]) for r in g], k) for g in full])
    out["headline"] = f"avg@{n}"
    return out


def paper_average(per_bench: dict[str, dict]) -> float:
    """AVG: mean over benchmarks of each one's headline metric."""
    return _mean([m[m["headline"]] for m in per_bench.values()])


def _mean(xs: Iterable[float]) -> float:
    xs = list(xs)
    return float(sum(xs)) / len(xs) if xs else 0.0
