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

`--call` (issue 42) measures the output layer alone, where the entropy's memory goes, on Qwen's 151,936-token
vocabulary and 1,024 tokens: verl's actor-update path of the FSDP engine without fused kernels (logits ->
`logprobs_from_logits`, the entropy, then `ppo_loss`'s `pg_loss - entropy_coeff * entropy_loss` with coefficient
0 and the backward), each configuration in a fresh process:

    log-prob            verl's log-prob call alone (no entropy)
    verl entropy        + verl's `entropy_from_logits` (what every objective cost before issue 42)
    ours                + `dhpo_suite.train.entropy.entropy_without_grad` (what the plugin gives verl's engine)

Peak memory is the call's rise of the process's peak RSS (CPU) or max allocated (CUDA) over what it held before.

    python benchmarks/verl_entropy.py --call                 # --vocab 151936 --tokens 1024 --hidden 256
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


CALLS = ("log-prob", "verl entropy", "ours")


def one_call(kind: str, vocab: int, tokens: int, hidden: int, device: str, repeats: int) -> dict:
    """The output layer's forward and backward as verl's engine and ppo_loss run it (module docstring)."""
    import resource
    import time

    import psutil
    import torch
    from verl.utils.torch_functional import entropy_from_logits, logprobs_from_logits

    from dhpo_suite.train.entropy import entropy_without_grad

    g = torch.Generator().manual_seed(0)
    h = torch.randn(tokens, hidden, generator=g).to(device).requires_grad_()
    w = (torch.randn(vocab, hidden, generator=g) / hidden**0.5).to(device).requires_grad_()
    labels = torch.randint(0, vocab, (tokens,), generator=g).to(device)
    entropy_fn = {"log-prob": None, "verl entropy": entropy_from_logits, "ours": entropy_without_grad}[kind]

    def call() -> None:
        logits = h @ w.T
        entropy = entropy_fn(logits) if entropy_fn is not None else None
        log_probs = logprobs_from_logits(logits, labels, inplace_backward=entropy is None)
        loss = -log_probs.mean()
        if entropy is not None:
            loss = loss - 0.0 * entropy.mean()  # ppo_loss: policy_loss -= entropy_coeff * entropy_loss
        loss.backward()

    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    else:
        before = psutil.Process().memory_info().rss
    times = []
    for _ in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        call()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - start, time.process_time() - cpu))
    if device == "cuda":
        peak = torch.cuda.max_memory_allocated() - before
    else:  # ru_maxrss: KiB on Linux
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    return dict(call=kind, seconds=statistics.median(t for t, _ in times),
                cpu_seconds=statistics.median(c for _, c in times), peak_mib=peak / 2**20)


def measure_calls(args) -> None:
    import subprocess

    device = args.device if args.device != "auto" else "cpu"
    print(f"# verl's output layer: {args.tokens} tokens x {args.vocab:,} vocabulary (hidden {args.hidden}), "
          f"{device}, median of {args.steps} calls, each configuration in a fresh process", flush=True)
    rows = []
    for kind in CALLS:
        code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import verl_entropy as b; "
                f"print(json.dumps(b.one_call({kind!r}, {args.vocab}, {args.tokens}, {args.hidden}, {device!r}, "
                f"{args.steps})))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    base = rows[0]
    print(f"{'call':<14}{'wall s':>8}{'cpu s':>8}{'peak MiB':>10}{'x mem':>8}")
    for r in rows:
        print(f"{r['call']:<14}{r['seconds']:>8.2f}{r['cpu_seconds']:>8.2f}{r['peak_mib']:>10.0f}"
              f"{r['peak_mib'] / base['peak_mib']:>8.2f}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--call", action="store_true", help="the output layer alone (module docstring)")
    ap.add_argument("--vocab", type=int, default=151936, help="--call: vocabulary (Qwen3's)")
    ap.add_argument("--tokens", type=int, default=1024, help="--call: tokens of the micro-batch")
    ap.add_argument("--hidden", type=int, default=256, help="--call: hidden size")
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
    if args.call:
        measure_calls(args)
        return
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
