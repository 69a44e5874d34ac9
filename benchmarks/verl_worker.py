"""verl actor-worker step time and peak memory with dhpo-suite losses, side by side in one run.

Runs verl's real ActorRolloutRefWorker (FSDP2 engine, world size 1, no Ray, no vLLM: responses are random
tokens) through `dhpo_suite.testing.verl_worker`, once per configuration, in fresh processes:

    loss      verl:vanilla (verl's own PPO loss: the baseline), grpo and dhpo-e (ours, telemetry off and on)
    entropy   on CUDA also with verl's fused kernels (entropy and log-probs without the full logits)

and prints the median update time over the steps after the first (warm-up; wall and process CPU time) and
the peak memory of an update (CUDA: torch.cuda.max_memory_allocated; CPU: the process's max RSS). Ratios
are to verl:vanilla without fused kernels (CUDA: wall time; CPU: CPU time, as wall time is noisy on a
shared machine).

    python benchmarks/verl_worker.py                      # CPU: tiny model, gloo
    python benchmarks/verl_worker.py --shape small        # CUDA: a 0.4B Qwen3 with Qwen's 152K vocabulary
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

SHAPES = {
    # Qwen3 layouts; "small" keeps Qwen's vocabulary, where materialising logits dominates memory.
    "tiny": None,  # dhpo_suite.models.tiny
    "small": dict(hidden_size=1024, intermediate_size=3072, num_hidden_layers=8, num_attention_heads=16,
                  num_key_value_heads=4, head_dim=64, max_position_embeddings=8192, vocab_size=151936),
}


def build_model(shape: str, out: Path) -> Path:
    from dhpo_suite.models.tiny import build_tiny_model, build_tokenizer

    if SHAPES[shape] is None:
        return build_tiny_model(out)
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    tok = build_tokenizer(0)
    eos, pad = tok.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])
    config = Qwen3Config(tie_word_embeddings=True, eos_token_id=eos, pad_token_id=pad, bos_token_id=None,
                         dtype="bfloat16", **SHAPES[shape])
    torch.manual_seed(0)
    Qwen3ForCausalLM(config).to(torch.bfloat16).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def measure(model: Path, objective: str, fused: bool, telemetry: bool, args) -> dict:
    from dhpo_suite.testing.verl_worker import LocalCase, run_distributed

    with tempfile.TemporaryDirectory() as runs:
        case = LocalCase(
            str(model), (objective,), steps=args.steps, prompts=args.prompts, group_size=args.group_size,
            prompt_len=args.prompt_len, response_len=args.response_len, mini_batches=1,
            max_tokens_per_gpu=args.max_tokens, run_dir=runs if telemetry else None, device=args.device,
            fused_kernels=fused,
            gradient_checkpointing=args.device == "cuda", lr=1e-6, check_weights=False,
        )
        steps = run_distributed(case, world=1, timeout=1800)[0]
    timed = steps[1:] or steps
    return dict(objective=objective, fused=fused, telemetry=telemetry,
                seconds=statistics.median(s["seconds"] for s in timed),
                cpu_seconds=statistics.median(s["cpu_seconds"] for s in timed),
                peak_gib=max(s["peak_memory_gib"] for s in timed))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--shape", default=None, choices=sorted(SHAPES), help="default: tiny on CPU, small on CUDA")
    ap.add_argument("--steps", type=int, default=3, help="update steps per configuration (first = warm-up)")
    ap.add_argument("--prompts", type=int, default=None, help="default: 4 on CPU, 16 on CUDA")
    ap.add_argument("--group-size", type=int, default=4)
    ap.add_argument("--prompt-len", type=int, default=None, help="default: 16 on CPU, 256 on CUDA")
    ap.add_argument("--response-len", type=int, default=None, help="default: 32 on CPU, 2048 on CUDA")
    ap.add_argument("--max-tokens", type=int, default=None, help="dynamic-batch tokens per micro-batch")
    ap.add_argument("--objectives", default="verl:vanilla,grpo,dhpo-e")
    args = ap.parse_args(argv)
    import torch

    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    gpu = args.device == "cuda"
    args.shape = args.shape or ("small" if gpu else "tiny")
    args.prompts = args.prompts or (16 if gpu else 4)
    args.prompt_len = args.prompt_len or (256 if gpu else 16)
    args.response_len = args.response_len or (2048 if gpu else 32)
    args.max_tokens = args.max_tokens or (16384 if gpu else 256)
    device = torch.cuda.get_device_name() if gpu else f"CPU ({torch.get_num_threads()} threads)"
    print(f"# verl worker benchmark: {device}, shape={args.shape}, {args.prompts}x{args.group_size} responses "
          f"of <= {args.response_len} tokens, {args.steps} steps", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        model = build_model(args.shape, Path(tmp) / "model")
        rows = []
        for fused in ([False, True] if gpu else [False]):
            for objective in args.objectives.split(","):
                for telemetry in ([False] if objective.startswith("verl:") else [False, True]):
                    rows.append(measure(model, objective, fused, telemetry, args))
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    base = next(r for r in rows if r["objective"] == "verl:vanilla" and not r["fused"]) \
        if any(r["objective"] == "verl:vanilla" for r in rows) else rows[0]
    # On a shared CPU, wall time is noisy: the ratio uses CPU time there (all threads of the process).
    key = "seconds" if gpu else "cpu_seconds"
    print(f"{'loss':<14}{'telemetry':<11}{'fused':<7}{'step s':>9}{'cpu s':>8}"
          f"{'x time':>8}{'peak GiB':>10}{'x mem':>8}")
    for r in rows:
        print(f"{r['objective']:<14}{str(r['telemetry']):<11}{str(r['fused']):<7}{r['seconds']:>9.3f}"
              f"{r['cpu_seconds']:>8.3f}{r[key] / base[key]:>8.2f}"
              f"{r['peak_gib']:>10.2f}{r['peak_gib'] / max(base['peak_gib'], 1e-9):>8.2f}")


if __name__ == "__main__":
    main()
