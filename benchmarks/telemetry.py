"""Telemetry and run-directory budgets, measured side by side (figures go to benchmarks/RESULTS.md).

    .venv/bin/python benchmarks/telemetry.py            # everything (paper scale: ~1-2 min on 2 cores)
    .venv/bin/python benchmarks/telemetry.py --quick    # 1/8 of the paper batch, extrapolated

1. Reduction cost: TelemetryAccumulator.add_update vs one embedded-trainer micro-step (tiny Qwen3:
   forward + chunked log-prob/entropy + objective + backward), same threads, same inputs.
2. Disk per step at paper scale: 512 prompts x 16 responses x 4096 tokens through dhpo-e and the
   accumulator in micro-batches, then RunWriter.write_step; bytes per file kind.
3. Reading: scalars of a 1000-step run (compacted, and the worst case of 1000 uncompacted files), and one
   step's distributions (one histogram; all of them).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import torch

from dhpo_suite.runs import Manifest, RunReader, RunWriter, StepRecord, TelemetrySpec
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import TelemetryAccumulator

MiB = 1024 * 1024


def timeit(fn, reps: int, warmup: int = 2) -> float:
    """Median seconds of `reps` calls after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def fake_batch(B: int, T: int, g: torch.Generator, vocab: int = 151_000):
    """Inputs shaped like a real update: lognormal entropies, small log-ratios, ragged lengths."""
    old = -torch.rand(B, T, generator=g) * 2
    lp = old + torch.randn(B, T, generator=g) * 0.05
    lengths = torch.randint(T // 8, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None] < lengths[:, None]
    adv = torch.randn(B, 1, generator=g).expand(B, T)
    ent = (0.3 * torch.exp(1.5 * torch.randn(B, T, generator=g))).clamp(max=12)
    ids = torch.randint(0, vocab, (B, T), generator=g)
    return lp, old, adv, mask, ent, ids, lengths


def micro_step_cost(reps: int) -> dict:
    """Telemetry add_update vs an embedded-trainer micro-step on the tiny model (32 responses x 64 tokens)."""
    from dhpo_suite.models.tiny import build_tiny_model
    from dhpo_suite.train.embedded.logprobs import response_logprobs
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny"))
    B, P, T = 32, 48, 64
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, model.config.vocab_size, (B, P + T), generator=g)
    att = torch.ones_like(ids)
    _, old, adv, mask, _, _, _ = fake_batch(B, T, g, vocab=500)
    obj = get_objective("dhpo-e")
    state = {}

    def step():
        lp, ent = response_logprobs(model, ids, att, P)
        out = obj(lp, old, adv, mask, entropy=ent)
        model.zero_grad(set_to_none=True)
        out.loss.backward()
        state["out"] = out

    t_step = timeit(step, reps)
    out = state["out"]
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=T))
    rids = torch.arange(B)
    t_tel = timeit(lambda: acc.add_update(out, response_ids=rids, token_ids=ids[:, P:], old_log_prob=old), reps * 3)
    acc.add_rollout(torch.rand(B), mask.sum(1), torch.zeros(B, dtype=torch.bool), 8)
    t_rec = timeit(lambda: acc.to_record(1), reps)
    return {"micro_step_s": t_step, "add_update_s": t_tel, "ratio": t_tel / t_step, "to_record_s": t_rec,
            "tokens": B * T}


def paper_scale_step(prompts: int, group: int, T: int, micro: int, run_dir: Path) -> dict:
    """Accumulate one paper-scale step in micro-batches of `micro` responses; write it; sizes per kind."""
    g = torch.Generator().manual_seed(1)
    obj = get_objective("dhpo-e")
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=T), decode=lambda ids: [f"t{i}" for i in ids])
    n = prompts * group
    t_tel = t_obj = 0.0
    all_lengths = []
    for start in range(0, n, micro):
        lp, old, adv, mask, ent, ids, lengths = fake_batch(micro, T, g)
        t0 = time.perf_counter()
        out = obj(lp, old, adv, mask, entropy=ent)
        t1 = time.perf_counter()
        acc.add_update(out, response_ids=torch.arange(start, start + micro), token_ids=ids, old_log_prob=old)
        t_tel += time.perf_counter() - t1
        t_obj += t1 - t0
        all_lengths.append(lengths)
    lengths = torch.cat(all_lengths)
    acc.add_rollout(torch.rand(n, generator=g).round(), lengths, lengths == T, group)
    t0 = time.perf_counter()
    rec = acc.to_record(1, grad_norm=0.3, lr=1e-6)
    t_rec = time.perf_counter() - t0
    with RunWriter(run_dir, Manifest(algorithm="dhpo-e")) as w:
        t0 = time.perf_counter()
        w.write_step(rec)
        t_write = time.perf_counter() - t0
    sizes = {k: (run_dir / k / "step-000001.parquet").stat().st_size for k in ("distributions", "outliers", "samples")}
    sizes["scalars"] = (run_dir / "scalars" / "scalars.parquet").stat().st_size
    return {"responses": n, "tokens": int(lengths.sum()), "slots": n * T, "sizes": sizes,
            "total": sum(sizes.values()), "add_update_s": t_tel, "objective_s": t_obj, "to_record_s": t_rec,
            "write_s": t_write, "record": rec}


def read_costs(rec: StepRecord, paper_dir: Path, tmp: Path) -> dict:
    """Scalars of 1000 steps (closed run: all compacted; live run: the worst case of 24 pending files)."""
    scalar_only = StepRecord(0, rec.scalars)
    out = {}
    for label in ("closed", "live"):
        d = tmp / f"run-{label}"
        w = RunWriter(d, Manifest(algorithm="dhpo-e"), fsync=False)  # default compact_every=25
        for s in range(1000):
            scalar_only.step = s
            w.write_step(scalar_only)
            if label == "live" and s == 975:
                w.compact()  # so that the last 24 steps stay uncompacted: the worst case of a live run
        if label == "closed":
            w.close()
        pending = len(list((d / "scalars").glob("step-*.parquet")))
        out[f"scalars_1000_{label}_s"] = timeit(lambda: RunReader(d).scalars(), 5, 1)
        out[f"pending_{label}"] = pending
        assert len(RunReader(d).scalars()) == 1000
    r = RunReader(paper_dir)
    out["one_distribution_s"] = timeit(lambda: r.distributions(1, "entropy_x_log_ratio"), 10)
    out["all_distributions_s"] = timeit(lambda: r.step_distributions(1), 10)
    out["n_distributions"] = len(r.step_distributions(1))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="1/8 of the paper batch (64 prompts), extrapolated")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parts", type=lambda x: {int(p) for p in x.split(",")}, default={1, 2, 3},
                    help="comma-separated subset of 1,2,3")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tmp = Path(tempfile.mkdtemp(prefix="telemetry-bench-"))
    print(f"torch threads {args.threads}; scratch {tmp}")
    try:
        run_parts(args, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_parts(args, tmp: Path) -> None:

    if 1 in args.parts:
        m = micro_step_cost(reps=10)
        print(f"\n[1] micro-step (tiny Qwen3, {m['tokens']} response tokens): "
              f"fwd+bwd {m['micro_step_s'] * 1e3:.1f} ms, "
              f"add_update {m['add_update_s'] * 1e3:.2f} ms -> {100 * m['ratio']:.1f} % (budget 5 %); "
              f"to_record once per step {m['to_record_s'] * 1e3:.1f} ms")
    prompts = 64 if args.quick or 2 not in args.parts else 512
    p = paper_scale_step(prompts, 16, 4096, 64, tmp / "paper")
    if 2 in args.parts:
        scale = 512 / prompts
        print(f"\n[2] one step: {p['responses']} responses x 4096 slots ({p['slots'] / 1e6:.1f} M slots, "
              f"{p['tokens'] / 1e6:.1f} M valid tokens)")
        for k, v in p["sizes"].items():
            print(f"    {k:14s} {v / 1024:8.1f} KiB")
        print(f"    total          {p['total'] / MiB:8.3f} MiB (budget 2 MiB; size does not grow with tokens: "
              f"fixed bins, top-K, {len(p['record'].samples)} samples)")
        print(f"    add_update total {p['add_update_s']:.2f} s ({p['add_update_s'] / p['slots'] * 1e9:.1f} ns/slot), "
              f"objective {p['objective_s']:.2f} s ({p['add_update_s'] / p['objective_s']:.2f}x), "
              f"to_record {p['to_record_s'] * 1e3:.0f} ms, write_step {p['write_s'] * 1e3:.0f} ms"
              + (f"; x{scale:.0f} for the paper batch" if scale > 1 else ""))
    if 3 in args.parts:
        r = read_costs(p["record"], tmp / "paper", tmp)
        print(f"\n[3] scalars of 1000 steps: closed run {r['scalars_1000_closed_s'] * 1e3:.0f} ms, live run with "
              f"{r['pending_live']} uncompacted step files {r['scalars_1000_live_s'] * 1e3:.0f} ms (budget 1 s)")
        print(f"    one step's distributions: one histogram {r['one_distribution_s'] * 1e3:.1f} ms, "
              f"all {r['n_distributions']} {r['all_distributions_s'] * 1e3:.1f} ms (budget 0.2 s)")


if __name__ == "__main__":
    main()
