"""The embedded RL loop, top to bottom. One step:

    prompts  = prompts_per_step training problems (seeded by (seed, step))
    rollout  = G samples per prompt at --temperature                     rollout.sample
    rewards  = shared grader: 1 if the \\boxed{} answer is right else 0  reward.grade_rewards
    Â        = group-normalised rewards (eq. 1)                           objectives.group_advantages
    log π_old = per-token log-probs before the update                     update.old_logprobs
    update   = PPO epochs x mini-batches with the library objective       update.ppo_update
    log      = telemetry StepRecord -> run directory; checkpoint every N  runs.RunWriter, checkpoint.py
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Callable

import torch

from dhpo_suite.tracking.live import open_live
from dhpo_suite.train.embedded.config import ConfigError, TrainConfig
from dhpo_suite.train.embedded.reward import grade_rewards, heldout_reward, unmarked_share
from dhpo_suite.train.embedded.rollout import encode_prompts, sample
from dhpo_suite.train.embedded.step_context import StepContext, StepTimer, TrainResult
from dhpo_suite.train.embedded.update import StepBatch, old_logprobs, ppo_update

__all__ = ["ConfigError", "TrainResult", "step_prompts", "train", "train_step"]


class _TimedTelemetry:
    """Forwards to a TelemetryAccumulator, charging its time to the 'telemetry' phase."""

    def __init__(self, acc, timer: StepTimer) -> None:
        self.acc, self.timer = acc, timer

    def __getattr__(self, name: str):
        fn = getattr(self.acc, name)

        def timed(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                self.timer.add("telemetry", t0)

        return timed


def step_prompts(problems: list[dict], n: int, seed: int, step: int) -> list[dict]:
    """The step's prompts: a seeded draw without replacement (same for a (seed, step), resume included)."""
    return random.Random(f"prompts/{seed}/{step}").sample(problems, n)


def train_step(ctx: StepContext, step: int, acc) -> dict:
    """One RL step (rollout -> rewards -> advantages -> old log-probs -> update). Returns step facts."""
    from dhpo_suite.train.objectives import group_advantages

    cfg, timer = ctx.cfg, ctx.timer
    batch = step_prompts(ctx.problems, cfg.prompts_per_step, cfg.seed, step)
    t0 = time.perf_counter()
    prompts = encode_prompts(ctx.tokenizer, [ctx.task.messages(p) for p in batch])
    roll = sample(ctx.model, ctx.tokenizer, prompts, cfg.group_size, ctx.max_new_tokens,
                  temperature=cfg.temperature, seed=cfg.seed * 1_000_003 + step)
    timer.add("rollout", t0)
    t0 = time.perf_counter()
    golds = [p["answer"] for p in batch for _ in range(cfg.group_size)]
    rewards, verdicts = grade_rewards(ctx.pool, roll.texts, golds, ctx.task.bench, unmarked=cfg.reward_unmarked)
    timer.add("reward", t0)
    advantages = group_advantages(rewards, cfg.group_size)
    acc.add_rollout(rewards, roll.lengths, roll.truncated, cfg.group_size)
    t0, telemetry_before = time.perf_counter(), timer.s.get("telemetry", 0.0)
    old = old_logprobs(ctx.model, roll, cfg.chunk_tokens)
    norms = ppo_update(ctx.model, ctx.optimizer, ctx.scheduler, StepBatch(roll, old, advantages), ctx.objective,
                       epochs=cfg.ppo_epochs, mini_batches=cfg.mini_batches, max_grad_norm=cfg.max_grad_norm,
                       chunk_tokens=cfg.chunk_tokens, generator=ctx.generator, telemetry=acc,
                       micro_batch=cfg.micro_batch)
    timer.add("update", t0)
    timer.s["update"] -= timer.s["telemetry"] - telemetry_before  # telemetry inside the update: reported on its own
    n_tokens = int(roll.lengths.sum())
    return {"reward": float(rewards.mean()), "grad_norm": sum(norms) / len(norms), "tokens": n_tokens,
            "unmarked_share": unmarked_share(verdicts),
            "lr": ctx.scheduler.get_last_lr()[0],
            # what the kept responses answered: the problem as the user turn shows it, and its gold
            "prompts": [ctx.task.messages(p)[-1]["content"] for p in batch], "golds": [p["answer"] for p in batch]}


def _extra(timer: StepTimer, facts: dict, cfg: TrainConfig) -> dict:
    s = timer.s
    update_tokens = facts["tokens"] * cfg.ppo_epochs
    return {"time/rollout_s": s.get("rollout", 0.0), "time/reward_s": s.get("reward", 0.0),
            "time/update_s": s.get("update", 0.0), "time/telemetry_s": s.get("telemetry", 0.0),
            "throughput/rollout_tok_s": facts["tokens"] / max(s.get("rollout", 1e-9), 1e-9),
            "throughput/update_tok_s": update_tokens / max(s.get("update", 1e-9), 1e-9),
            "reward/unmarked_share": facts["unmarked_share"]}


def train(cfg: TrainConfig, *, log: Callable[[str], None] = print, show_progress: bool = True,
          explicit: frozenset[str] | None = None) -> TrainResult:
    """Run (or resume) one embedded training run; see the module docstring for the step.

    `explicit`: the config fields the user gave (resume: any that contradicts the stored run is an error);
    None: those that differ from the defaults. Every check, and the run directory's one-writer lock, comes
    before the model is loaded.
    """
    from dhpo_suite.train.embedded import run_setup

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-checkpoint "Writing model shards" bars would bury the run's own bar
    t_start = time.perf_counter()
    cfg = cfg.validate()
    torch.set_num_threads(cfg.threads)
    run_dir, cfg = run_setup.prepare(cfg, explicit)
    with run_setup.writer_lock(run_dir, log):
        done = run_setup.finish_if_done(cfg, run_dir, log)
        return done or _train(cfg, run_dir, log, show_progress, t_start)


def _train(cfg: TrainConfig, run_dir: Path, log: Callable[[str], None], show_progress: bool,
           t_start: float) -> TrainResult:
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.runs import RunWriter
    from dhpo_suite.train.embedded import run_setup
    from dhpo_suite.train.telemetry import TelemetryAccumulator, token_decoder

    last = run_setup.restore(cfg, run_dir, log)  # a damaged or crafted checkpoint is refused before any worker
    with GraderPool(workers=cfg.grader_workers, timeout=10.0) as pool:
        ctx, start, manifest, spec, heldout = run_setup.build(cfg, run_dir, pool, log, last)
        acc = TelemetryAccumulator(spec, decode=token_decoder(ctx.tokenizer))
        eval_problems = heldout
        evaluate = lambda: heldout_reward(  # noqa: E731
            ctx.model, ctx.tokenizer, ctx.task, eval_problems, pool, max_new_tokens=ctx.max_new_tokens,
            temperature=cfg.temperature, seed=cfg.seed + 7)
        initial = evaluate() if start == 1 else run_setup.stored_initial(run_dir)
        final = initial if initial is not None else float("nan")
        log(f"run directory: {run_dir}   (watch it: dhpo-suite dashboard {run_dir.parent})")
        with RunWriter(run_dir, manifest, resume=cfg.resume) as writer, \
                run_setup.progress_bar(show_progress, cfg.steps, start - 1) as bar, \
                open_live(run_dir, writer.manifest, cfg.logger, warn=log) as mirrors:  # --logger: TensorBoard, W&B
            for step in range(start, cfg.steps + 1):
                ctx.timer.s.clear()
                acc.reset()
                facts = train_step(ctx, step, _TimedTelemetry(acc, ctx.timer))
                extra = _extra(ctx.timer, facts, cfg)
                if step == 1 and initial is not None:
                    extra["eval/heldout_reward_initial"] = initial
                if step == cfg.steps or (cfg.eval_every and step % cfg.eval_every == 0):
                    final = extra["eval/heldout_reward"] = evaluate()
                t0 = time.perf_counter()
                record = acc.to_record(step, grad_norm=facts["grad_norm"], lr=facts["lr"], extra=extra)
                record.attach_prompts(facts["prompts"], facts["golds"], cfg.group_size)
                writer.write_step(record)
                ctx.timer.add("telemetry", t0)
                mirrors.submit(record)  # a queue put: the mirrors run on their own thread
                if step % cfg.checkpoint_every == 0 or step == cfg.steps:
                    run_setup.checkpoint(writer, ctx, step)
                bar.advance(step, facts["reward"], final)
    wall = time.perf_counter() - t_start
    log(f"done: {cfg.steps} steps in {wall:.0f} s; held-out reward {_fmt(initial)} -> {_fmt(final)}")
    log(f"open the dashboard: dhpo-suite dashboard {run_dir.parent}")
    return TrainResult(run_dir, cfg.steps, initial, final, wall)


def _fmt(x: float | None) -> str:
    return "?" if x is None else f"{x:.3f}"

