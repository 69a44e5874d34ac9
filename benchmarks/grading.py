"""Grading throughput: GraderPool (2 workers) vs single-process math-verify, side by side in one run.

Items: for every real gold of the 7 test sets, an equivalent rewrite (numeric forms, thousands
separators, scientific notation, spacing, list order; `dhpo_suite.testing.grading_rewrites`) and a near
miss, each wrapped in a model-like sentence. The baseline is plain math-verify in one process
(`parse(response)`, `parse("\\\\boxed{gold}")`, `verify` with its default signal-based timeouts)
under the same antlr4 4.13.2, run in a child interpreter. Also measured: worker start-up
(forkserver vs spawn), single-item latency through the pool, and the worst case (an item that
hangs, bounded by the timeout). Load average is printed: other agents share the 2 cores.

    .venv/bin/python benchmarks/grading.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCHES = ("aime24", "aime25", "amc23", "gsm8k", "math500", "minerva_math", "olympiadbench")
ROOT = Path(__file__).resolve().parents[1]


def build_items(quick: bool) -> list[tuple[str, list[str], str, bool]]:
    """(response, golds, bench, expected) for a rewrite and a near miss of each gold."""
    from dhpo_suite.testing.grading_rewrites import equivalent_rewrites, near_miss, responses

    bench_dir = Path(os.environ.get("DHPO_BENCHMARKS_DIR", ROOT.parent / "shared" / "benchmarks"))
    items = []
    for bench in BENCHES:
        rows = [json.loads(line) for line in (bench_dir / f"{bench}.jsonl").open()]
        for number, row in enumerate(rows[:: 10 if quick else 1]):
            golds = [row["answer"], *row.get("answer_alt", [])]
            forms = equivalent_rewrites(row["answer"])
            rewrite = forms[1 + number % (len(forms) - 1)] if len(forms) > 1 else forms[0]
            items.append((responses(rewrite)[number % 3], golds, bench, True))
            items.append((responses(near_miss(row["answer"]))[number % 3], golds, bench, False))
    return items


def baseline(items_file: str) -> None:
    """Child process: plain math-verify in a loop (same antlr4 4.13.2 as the workers)."""
    from dhpo_suite.grading import runtime

    runtime.activate()
    from math_verify import parse, verify

    items = json.loads(Path(items_file).read_text())
    verdicts, worst = [], 0.0
    start, cpu = time.perf_counter(), time.process_time()
    for response, golds, _bench, _expected in items:
        t0 = time.perf_counter()
        try:
            verdicts.append(bool(verify(parse("\\boxed{" + golds[0] + "}"), parse(response))))
        except Exception:  # noqa: BLE001 - counted as wrong, as a caller of math-verify would
            verdicts.append(False)
        worst = max(worst, time.perf_counter() - t0)
    print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu,
                      "worst": worst, "verdicts": verdicts}))


def run_baseline(items) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(items, handle)
    out = subprocess.run([sys.executable, __file__, "--baseline", handle.name],
                         capture_output=True, text=True, check=True)
    os.unlink(handle.name)
    return json.loads(out.stdout.strip().splitlines()[-1])


def start_up(method: str) -> float:
    """Seconds from GraderPool() to a first answer from its worker."""
    from dhpo_suite.grading import GraderPool

    t0 = time.perf_counter()
    with GraderPool(workers=1, start_method=method) as pool:
        pool.runtime_info()
        return time.perf_counter() - t0


def latency(pool, items, count: int) -> list[float]:
    times = []
    for response, golds, bench, _ in items[:: max(1, len(items) // count)]:
        t0 = time.perf_counter()
        pool.grade(response, golds, bench)
        times.append(time.perf_counter() - t0)
    return times


def accuracy(verdicts, items) -> tuple[float, int]:
    """(share of rewrites accepted, number of near misses accepted = false positives)."""
    rewrites = [v for v, item in zip(verdicts, items) if item[3]]
    false_pos = sum(v for v, item in zip(verdicts, items) if not item[3])
    return sum(rewrites) / len(rewrites), false_pos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="every 10th gold (~600 items)")
    parser.add_argument("--baseline", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        return baseline(args.baseline)
    from dhpo_suite.grading import GraderPool

    items = build_items(args.quick)
    load_before = os.getloadavg()[0]
    print(f"{len(items)} items ({len(items) // 2} golds x rewrite + near miss), "
          f"{os.cpu_count()} cores, load average {load_before:.1f}")
    cold_fork, warm_fork, spawn = start_up("forkserver"), start_up("forkserver"), start_up("spawn")
    print(f"worker start-up to first answer: forkserver cold {cold_fork:.2f} s (server imports "
          f"math-verify once), forkserver warm {warm_fork:.3f} s, spawn {spawn:.2f} s")

    base = run_baseline(items)
    with GraderPool(workers=2, timeout=5.0) as pool:
        cpu0 = sum(info["cpu_s"] for info in pool.runtime_info())
        t0 = time.perf_counter()
        verdicts = pool.grade_many([item[:3] for item in items])
        pool_s = time.perf_counter() - t0
        pool_cpu = sum(info["cpu_s"] for info in pool.runtime_info()) - cpu0
        lat = latency(pool, items, 200)
        t0 = time.perf_counter()
        hang = pool.grade(r"\boxed{10^{10^{10^{10}}}}", "1", timeout=2.0)
        hang_s = time.perf_counter() - t0
        stats = dict(pool.stats)
        stats["timeouts"] -= hang.status == "timeout"  # the deliberate hang is not part of the batch
    load_after = os.getloadavg()[0]

    n = len(items)
    print(f"single-process math-verify: {base['seconds']:.1f} s, {n / base['seconds']:.0f} items/s, "
          f"worst item {base['worst']:.2f} s")
    print(f"GraderPool(workers=2):      {pool_s:.1f} s, {n / pool_s:.0f} items/s  "
          f"-> ratio {base['seconds'] / pool_s:.2f}x (goal >= 1.8x on 2 cores)")
    # A killed worker's CPU is gone with it; each timed-out item used at most `timeout` seconds.
    pool_cpu_max = pool_cpu + stats["timeouts"] * 5.0
    print(f"CPU seconds: math-verify {base['cpu']:.1f}; pool workers {pool_cpu:.1f} + at most "
          f"{stats['timeouts']} x 5 s in killed workers = {pool_cpu_max:.1f} -> on 2 free cores "
          f"ratio >= {base['cpu'] / (pool_cpu_max / 2):.2f}x (the wall ratio is this machine's)")
    print(f"pool single-item latency: median {statistics.median(lat) * 1e3:.1f} ms, "
          f"max {max(lat) * 1e3:.0f} ms; hanging item with timeout 2 s: {hang_s:.2f} s "
          f"(status {hang.status}); pool stats {stats}")
    for name, verdict_list in (("math-verify alone", base["verdicts"]),
                               ("GraderPool", [v.correct for v in verdicts])):
        accepted, false_pos = accuracy(verdict_list, items)
        print(f"{name:18s}: rewrites accepted {accepted:.1%}, near misses accepted (false "
              f"positives) {false_pos}")
    print(f"load average before/after: {load_before:.1f} / {load_after:.1f} "
          f"({'contended' if max(load_before, load_after) > 2.5 else 'quiet'})")


if __name__ == "__main__":
    main()
