"""Data parallelism for `dhpo-suite eval --dp N`: one evaluator process per model replica.

vLLM's offline `LLM` refuses `data_parallel_size > 1` in one process, so the CLI starts N copies of itself
with `--shard r/N --resume`, each on its own `tp` GPUs (CUDA_VISIBLE_DEVICES) and its own problems
(i % N == r), each writing `<bench>.samples.shard{r}ofN.jsonl` into the same results directory. The parent
waits, then recomputes summary.json from all shards. A failed worker stops the parent with its exit code;
rerunning with --resume continues every shard.
"""

from __future__ import annotations

import os
import subprocess
import sys

__all__ = ["parse_shard", "worker_argv", "gpu_slices", "run_workers"]


def parse_shard(spec: str) -> tuple[int, int]:
    """"r/N" -> (r, N) with 0 <= r < N."""
    try:
        rank, world = (int(x) for x in spec.split("/"))
    except ValueError:
        raise ValueError(f"--shard: expected RANK/WORLD such as 0/4, got {spec!r}") from None
    if not 0 <= rank < world:
        raise ValueError(f"--shard: need 0 <= RANK < WORLD, got {spec!r}")
    return rank, world


def worker_argv(argv: list[str], rank: int, world: int) -> list[str]:
    """The parent's `eval ...` arguments without --dp/--resume, plus `--shard rank/world --resume`."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--dp":
            skip = True
        elif not (arg.startswith("--dp=") or arg == "--resume"):
            out.append(arg)
    return [sys.executable, "-m", "dhpo_suite.cli", *out, "--shard", f"{rank}/{world}", "--resume"]


def gpu_slices(world: int, tp: int) -> list[str | None]:
    """CUDA_VISIBLE_DEVICES per worker (tp GPUs each), or None per worker when there are no GPUs."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        devices = [d for d in visible.split(",") if d.strip()]
    else:
        import torch

        devices = [str(i) for i in range(torch.cuda.device_count())]
    if not devices:
        return [None] * world
    if len(devices) < world * tp:
        raise ValueError(f"--dp {world} x --tp {tp} needs {world * tp} GPUs; {len(devices)} visible")
    return [",".join(devices[r * tp:(r + 1) * tp]) for r in range(world)]


def run_workers(argv: list[str], world: int, tp: int) -> None:
    """Start the N workers, wait for all; raise if any failed."""
    procs = []
    for rank, gpus in enumerate(gpu_slices(world, tp)):
        env = dict(os.environ) if gpus is None else {**os.environ, "CUDA_VISIBLE_DEVICES": gpus}
        procs.append(subprocess.Popen(worker_argv(argv, rank, world), env=env, stdout=subprocess.DEVNULL))
    codes = [p.wait() for p in procs]
    failed = [(r, c) for r, c in enumerate(codes) if c != 0]
    if failed:
        raise RuntimeError(f"data-parallel worker(s) failed (rank, exit code): {failed}; rerun with --resume")
