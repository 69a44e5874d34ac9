"""Evaluator overhead: the share of an evaluation's wall time NOT spent inside vLLM (target <= 5%).

Runs `evaluate()` on the tiny model (built here) over arith + math500 (local files) with the real grader and
compares its wall time with the time spent in vLLM's add_request/step (`Engine.generate_seconds`), side by
side in one run. Overhead = data loading, prompt rendering and tokenisation, stop-id derivation, grading not
hidden behind generation, appending + fsync, summaries. Engine start-up is excluded (it is vLLM loading).

    .venv/bin/python benchmarks/eval.py [--problems 32] [--samples 4] [--max-new-tokens 128]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=32, help="problems per benchmark")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--data-dir", default=os.environ.get("DHPO_BENCHMARKS_DIR")
                    or str(Path(__file__).resolve().parents[1] / "../shared/benchmarks"))
    args = ap.parse_args()

    from dhpo_suite.eval.engine import Engine, EngineOptions
    from dhpo_suite.eval.runner import EvalSettings, evaluate
    from dhpo_suite.models.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        model = build_tiny_model(Path(tmp) / "tiny", seed=0)
        t0 = time.perf_counter()
        engine = Engine(str(model), EngineOptions(seed=0))
        startup = time.perf_counter() - t0
        settings = EvalSettings(samples=args.samples, limit=args.problems, max_new_tokens=args.max_new_tokens,
                                batch_size=args.batch_size, data_dir=args.data_dir, grader_workers=1)
        t0 = time.perf_counter()
        summary = evaluate(engine, ["arith", "math500"], Path(tmp) / "out", settings, notify=lambda m: None)
        wall = time.perf_counter() - t0
        engine.close()
    gen = engine.generate_seconds
    n = sum(m["n_problems"] * m["n_samples"] for m in summary["benchmarks"].values())
    tokens = sum(m["len_mean"] * m["n_problems"] * m["n_samples"] for m in summary["benchmarks"].values())
    print(f"samples {n}, response tokens {tokens:.0f}, engine start-up {startup:.1f} s (excluded)")
    print(f"wall {wall:.2f} s | inside vLLM {gen:.2f} s | overhead {wall - gen:.2f} s "
          f"= {100 * (wall - gen) / wall:.1f}% of wall (target <= 5%)")


if __name__ == "__main__":
    main()
