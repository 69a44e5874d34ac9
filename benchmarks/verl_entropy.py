"""What verl's entropy costs in an actor update, now that every objective computes it (issue 25): verl's real
actor worker (FSDP2, world size 1, no Ray or vLLM; `dhpo_suite.testing.verl_worker`), each configuration in a
fresh process, side by side in one run:

    grpo, calculate_entropy=false     what a baseline cost before (the reference)
    grpo, calculate_entropy=true      what every objective costs now (entropy/* telemetry)
    dhpo-e                            which always needed it

Prints the median update time over the steps after the first (wall and process CPU time) and peak memory
(CUDA: max allocated; CPU: max RSS), with ratios to the first row (CPU time on a CPU, wall time on CUDA).

    python benchmarks/verl_entropy.py                        # CPU: tiny model
    python benchmarks/verl_entropy.py --shape small          # CUDA: Qwen3 layout with the 152K vocabulary
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verl_worker import SHAPES, build_model  # noqa: E402  (the same models as the worker benchmark)


def measure(model: Path, objective: str, entropy: bool, args) -> dict:
    from dhpo_suite.testing.verl_worker import LocalCase, run_distributed

    case = LocalCase(str(model), (objective,), steps=args.steps, prompts=args.prompts, group_size=args.group_size,
                     prompt_len=args.prompt_len, response_len=args.response_len, mini_batches=1,
                     max_tokens_per_gpu=args.max_tokens, device=args.device, fused_kernels=args.fused,
                     gradient_checkpointing=args.device == "cuda", lr=1e-6, check_weights=False, entropy=entropy)
    steps = run_distributed(case, world=1, timeout=1800)[0][1:]
    return dict(objective=objective, entropy=entropy, seconds=statistics.median(s["seconds"] for s in steps),
                cpu_seconds=statistics.median(s["cpu_seconds"] for s in steps),
                peak_gib=max(s["peak_memory_gib"] for s in steps))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--shape", default=None, choices=sorted(SHAPES), help="default: tiny on CPU, small on CUDA")
    ap.add_argument("--fused", action="store_true", help="verl's fused kernels (CUDA + triton)")
    ap.add_argument("--steps", type=int, default=4, help="update steps per configuration (first = warm-up)")
    ap.add_argument("--prompts", type=int, default=None, help="default: 4 on CPU, 16 on CUDA")
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--prompt-len", type=int, default=None, help="default: 16 on CPU, 256 on CUDA")
    ap.add_argument("--response-len", type=int, default=None, help="default: 64 on CPU, 2048 on CUDA")
    ap.add_argument("--max-tokens", type=int, default=None, help="dynamic-batch tokens per micro-batch")
    args = ap.parse_args(argv)
    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = args.device == "cuda"
    args.shape = args.shape or ("small" if gpu else "tiny")
    args.prompts = args.prompts or (16 if gpu else 4)
    args.prompt_len = args.prompt_len or (256 if gpu else 16)
    args.response_len = args.response_len or (2048 if gpu else 64)
    args.max_tokens = args.max_tokens or (16384 if gpu else 512)
    device = torch.cuda.get_device_name() if gpu else f"CPU ({torch.get_num_threads()} threads)"
    print(f"# verl entropy cost: {device}, shape={args.shape}, {args.prompts}x{args.group_size} responses of "
          f"<= {args.response_len} tokens, {args.steps} steps (first is warm-up)", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(args.shape, Path(tmp) / "model")
        rows = []
        for objective, entropy in (("grpo", False), ("grpo", True), ("dhpo-e", True)):
            rows.append(measure(model, objective, entropy, args))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    key = "seconds" if gpu else "cpu_seconds"
    base = rows[0]
    print(f"{'loss':<8}{'entropy':<9}{'step s':>9}{'cpu s':>8}{'x time':>8}{'peak GiB':>10}{'x mem':>8}")
    for r in rows:
        print(f"{r['objective']:<8}{str(r['entropy']):<9}{r['seconds']:>9.3f}{r['cpu_seconds']:>8.3f}"
              f"{r[key] / base[key]:>8.2f}{r['peak_gib']:>10.2f}{r['peak_gib'] / max(base['peak_gib'], 1e-9):>8.2f}")


if __name__ == "__main__":
    main()
