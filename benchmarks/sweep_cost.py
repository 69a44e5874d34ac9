"""What issue 26's grid costs on 2 idle cores: warm starts measured here, runs read from the kept data.

    .venv/bin/python benchmarks/sweep_cost.py --kept docs/reproduction/data/chain --since 2026-11-26T03:50 \
        [--warm-starts 8,9]

- Runs: the per-run wall times in the kept data's runs.csv (started_at, ended_at) of the runs that started
  after `--since` (the ones that ran two at a time on otherwise quiet cores), per arm.
- Warm starts: with `--warm-starts S1,S2`, two `dhpo-suite train` processes side by side (the sweep's two
  workers), each building the SFT warm start of its seed from scratch in a fresh cache (the sweep's task and
  options; one RL step after it, not counted): minutes from start until the warm start is in the cache.
- The grid: every arm's median run time × seeds, plus a warm start per seed, over 2 cores: the wall time of the
  40-run grid if the two workers never wait (an estimate from measured parts, not a measured grid).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd

TRAIN = ["--task", "arithmetic-chain", "--ppo-epochs", "4", "--mini-batches", "4", "--lr", "1e-4",
         "--eval-prompts", "16", "--eval-every", "5", "--checkpoint-every", "10", "--weight-decay", "0.1",
         "--warmup-steps", "10"]  # the sweep's options (docs/reproduction.md), 16 held-out problems, 1 step


def warm_start_minutes(seeds: list[int]) -> dict[int, float]:
    """Minutes each seed's warm start took, the seeds' processes side by side, each with one torch thread."""
    cache = Path(tempfile.mkdtemp(prefix="sweep-cost-cache-"))
    env = {**os.environ, "DHPO_SUITE_CACHE": str(cache), "OMP_NUM_THREADS": "1"}
    done: dict[int, float] = {}
    t0 = time.perf_counter()

    def one(seed: int) -> None:
        out = cache.parent / f"{cache.name}-run-{seed}"
        proc = subprocess.Popen([sys.executable, "-m", "dhpo_suite.cli", "train", "--algo", "grpo", "--seed",
                                 str(seed), "--steps", "1", "--threads", "1", "--no-progress", "--out", str(out),
                                 *TRAIN], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("warm-start: done"):
                done[seed] = (time.perf_counter() - t0) / 60
        proc.wait()

    threads = [threading.Thread(target=one, args=(s,)) for s in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kept", type=Path, default=Path("docs/reproduction/data/chain"))
    ap.add_argument("--since", required=True, help="runs that started after this UTC time ran on quiet cores")
    ap.add_argument("--warm-starts", default="", help="seeds whose warm starts to build and time, e.g. 8,9")
    ap.add_argument("--seeds", type=int, default=8, help="seeds of the grid")
    ap.add_argument("--warm-start-minutes", type=float, default=None,
                    help="use this per-warm-start time instead of measuring one")
    args = ap.parse_args()
    runs = pd.read_csv(args.kept / "runs.csv", parse_dates=["started_at", "ended_at"])
    runs["minutes"] = (runs["ended_at"] - runs["started_at"]).dt.total_seconds() / 60
    quiet = runs[runs["started_at"] >= pd.Timestamp(args.since, tz="UTC")]
    print(f"runs started after {args.since} (two at a time): {len(quiet)}")
    per_arm = {}
    for label, g in runs.groupby("label"):
        q = quiet[quiet["label"] == label]["minutes"]
        per_arm[label] = statistics.median(q) if len(q) else None
        print(f"- {label}: {', '.join(map(str, q.round(1))) or 'none on quiet cores'} min")
    scalars = pd.read_csv(args.kept / "scalars.csv.gz", usecols=lambda c: c == "run" or c.startswith("time/"))
    spent = scalars[scalars["run"].isin(quiet["run"])].groupby("run").sum()
    spent["wall"] = quiet.set_index("run")["minutes"] * 60
    spent["other"] = spent["wall"] - spent.drop(columns="wall").sum(axis=1)
    for run, row in spent.iterrows():
        parts = ", ".join(f"{c.removeprefix('time/').removesuffix('_s')} {row[c]:.0f} s ({row[c] / row['wall']:.0%})"
                          for c in spent.columns if c != "wall")
        print(f"  {run}: wall {row['wall']:.0f} s = {parts} (other: start-up, evaluations, checkpoints)")
    if args.warm_starts:
        ws = warm_start_minutes([int(s) for s in args.warm_starts.split(",")])
        print("warm starts side by side: " + ", ".join(f"seed {s} {m:.1f} min" for s, m in sorted(ws.items())))
        warm = statistics.mean(ws.values())
    else:
        warm = args.warm_start_minutes
    known = [m for m in per_arm.values() if m is not None]
    missing = [a for a, m in per_arm.items() if m is None]
    # an arm not measured on quiet cores is costed at the slowest measured arm (no arm is cheaper than GRPO)
    run_minutes = sum(known) + len(missing) * max(known)
    if warm is None:
        print(f"per seed, the runs: {run_minutes:.1f} core-min (no warm-start time given)")
        return
    total = args.seeds * (run_minutes + warm) / 2
    print(f"per seed: runs {run_minutes:.1f} + warm start {warm:.1f} core-min; {len(per_arm)} arms × "
          f"{args.seeds} seeds on 2 cores: {total:.0f} min ({total / 60:.2f} h)"
          + (f"; {', '.join(missing)} costed as the slowest measured arm" if missing else ""))


if __name__ == "__main__":
    main()
