"""Forward+backward time of every objective against verl's `vanilla` loss on the same tensors.

    python benchmarks/objectives.py [--batch 64 --tokens 4096 --device cpu --reps 10 --threads 1]

Prints one row per objective: median ms and the ratio to verl vanilla measured in the same run
(goal: DHPO-E <= 1.3x vanilla). On CPU it also prints the median thread CPU time: with one torch thread
every op runs on the calling thread, so CPU time is not inflated by other processes on a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.workers.config.actor import FSDPActorConfig

from dhpo_suite.train.objectives import OBJECTIVES, PAPER_AGG_MODE, get_objective
from dhpo_suite.train.telemetry import clip_flags


def make_inputs(B: int, T: int, device: str):
    g = torch.Generator(device="cpu").manual_seed(0)
    old = (-torch.rand(B, T, generator=g) * 3).to(device)
    lp = (old.cpu() + torch.randn(B, T, generator=g) * 0.2).to(device)
    lengths = torch.randint(T // 4, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None] < lengths[:, None]).to(device)
    adv = torch.randn(B, generator=g).to(device)
    ent = (torch.rand(B, T, generator=g) * 2).to(device)
    return lp, old, adv, mask, ent


def with_clip_flags(out) -> torch.Tensor:
    """The loss, after deriving every branch's clip flags as the telemetry does each step."""
    for branch in out.branches.values():
        clip_flags(branch, out.response_mask)
    return out.loss


def run_once(fn, lp, device: str) -> tuple[float, float]:
    """(wall s, thread CPU s) of one forward+backward."""
    x = lp.detach().clone().requires_grad_(True)
    if device == "cuda":
        torch.cuda.synchronize()
    t0, c0 = time.perf_counter(), time.thread_time()
    fn(x).backward()
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, time.thread_time() - c0


def interleaved_medians(fns: dict, lp, reps: int, device: str) -> dict[str, tuple[float, float]]:
    """Median (wall ms, CPU ms) per function, calling them round-robin so load drifts hit every row alike."""
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in fns}
    for i in range(reps + 2):
        for k, fn in fns.items():
            t = run_once(fn, lp, device)
            if i >= 2:  # two warm-up rounds
                times[k].append(t)
    return {k: (statistics.median(w for w, _ in v) * 1e3, statistics.median(c for _, c in v) * 1e3)
            for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=4096)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: CPU time is meaningful)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    lp, old, adv, mask, ent = make_inputs(args.batch, args.tokens, args.device)
    cfg = FSDPActorConfig(rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio_low=0.2, clip_ratio_high=0.2)
    vanilla = get_policy_loss_fn("vanilla")
    adv2d, maskf = adv[:, None].expand_as(lp), mask.float()
    # verl's loss under the aggregation every objective here uses by default (the shared setting)
    fns = {"verl vanilla": lambda x: vanilla(old, x, adv2d, maskf, PAPER_AGG_MODE, cfg)[0]}
    rows = [(n, {}) for n in OBJECTIVES] + [("dhpo-e", {"clip": "unified"}), ("dhpo-e", {"entropy_scope": "batch"})]
    for n, hp in rows:
        obj = get_objective(n, **hp)
        fns[n + "".join(f" {k}={v}" for k, v in hp.items())] = lambda x, obj=obj: obj(x, old, adv, mask, ent).loss
    for n in ("grpo", "dhpo-e"):  # what a step with telemetry pays (verl's loss computes its clip fractions too)
        fns[f"{n} + clip_flags"] = lambda x, obj=get_objective(n): with_clip_flags(obj(x, old, adv, mask, ent))
    ms = interleaved_medians(fns, lp, args.reps, args.device)
    name = torch.cuda.get_device_name() if args.device == "cuda" else f"CPU, {torch.get_num_threads()} threads"
    print(f"B={args.batch} T={args.tokens} fp32 on {name}; median of {args.reps} interleaved forward+backward calls;"
          f" loss_agg_mode {PAPER_AGG_MODE} for every row")
    print(f"{'objective':<28}{'wall ms':>10}{'x vanilla':>11}{'CPU ms':>10}{'x vanilla':>11}")
    base_w, base_c = ms["verl vanilla"]
    for label, (w, c) in ms.items():
        print(f"| {label:<26} | {w:>8.1f} | {w / base_w:>8.2f} | {c:>8.1f} | {c / base_c:>8.2f} |")


if __name__ == "__main__":
    main()
