"""Peak memory of the embedded trainer on SmolLM2-135M: whole mini-batches vs `--micro-batch N`, side by side.

    .venv/bin/python benchmarks/train_memory.py [--steps 2] [--micro-batch 8]

Runs `dhpo-suite train --model smollm2-135m --task arithmetic-chat` twice with the same seed (8 prompts x G=8,
2 mini-batches of 32 responses, --threads 2), once per setting, one after the other, and prints each run's
peak RSS (the child's own maximum, from wait4), its wall time, and the per-step reward and gradient norm of
both runs (same update: they should agree). Figures go in benchmarks/RESULTS.md and docs/train.md ("Memory").
About 6 min on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(out: Path, steps: int, micro_batch: int | None) -> tuple[float, float]:
    """(peak RSS in GiB, wall seconds) of one training run."""
    cmd = [sys.executable, "-m", "dhpo_suite.cli", "train", "--model", "smollm2-135m", "--task", "arithmetic-chat",
           "--steps", str(steps), "--prompts-per-step", "8", "-G", "8", "--lr", "3e-5", "--warmup-steps", "2",
           "--threads", "2", "--eval-prompts", "8", "--eval-every", "0", "--out", str(out), "--no-progress"]
    if micro_batch:
        cmd += ["--micro-batch", str(micro_batch)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"training failed: {' '.join(cmd)}")
    return usage.ru_maxrss / 2**20, time.perf_counter() - t0  # ru_maxrss is in KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--micro-batch", type=int, default=8)
    args = ap.parse_args()
    from dhpo_suite.runs import RunReader

    base = Path(tempfile.mkdtemp(prefix="train-memory-"))
    rows = {}
    for label, micro in (("whole mini-batches", None), (f"--micro-batch {args.micro_batch}", args.micro_batch)):
        out = base / ("whole" if micro is None else f"micro{micro}")
        rss, wall = run(out, args.steps, micro)
        rows[label] = (rss, wall, RunReader(out).scalars().set_index("step")[["reward/mean", "grad_norm"]])
    (w_rss, w_wall, w_f), (m_rss, m_wall, m_f) = rows.values()
    print(f"SmolLM2-135M, {args.steps} steps of 8 prompts x G=8, 2 mini-batches of 32, --threads 2\n")
    print("| setting | peak RSS (GiB) | wall (s) |\n|---|---|---|")
    for label, (rss, wall, _) in rows.items():
        print(f"| {label} | {rss:.2f} | {wall:.0f} |")
    print(f"\npeak RSS ratio micro/whole: {m_rss / w_rss:.2f}")
    for step in w_f.index:
        print(f"step {step}: reward {w_f.at[step, 'reward/mean']:.4f} vs {m_f.at[step, 'reward/mean']:.4f}, "
              f"grad norm {w_f.at[step, 'grad_norm']:.6f} vs {m_f.at[step, 'grad_norm']:.6f}")


if __name__ == "__main__":
    main()
