"""The embedded RL loop, top to bottom. One step:

    prompts  = prompts_per_step training problems (seeded by (seed, step))  step_prompts
    rollout  = G samples per prompt at --temperature                         rollout.sample
    rewards  = shared grader: 1 if the \\boxed{} answer is right else 0      reward.grade_rewards
    Â        = group-normalised rewards (eq. 1)                               objectives.group_advantages
    update   = log π_old once, then PPO epochs x mini-batches of the objective  update.old_logprobs, ppo_update
    log      = telemetry StepRecord -> run directory; checkpoint every N      runs.RunWriter, checkpoint.py

Where the run starts (new, resume or done; its directory locked) is start.py; the model, optimizer and checkpoint
to continue from are run_setup.py, which hands the loop a `Trainer`.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable

import torch

from dhpo_suite.grading import GraderPool
from dhpo_suite.runs.writer import RunWriter
from dhpo_suite.tracking.live import open_live
from dhpo_suite.tasks import get_task
from dhpo_suite.train.embedded import run_setup
from dhpo_suite.train.embedded.checkpoint import save_checkpoint
from dhpo_suite.train.embedded.config import ConfigError, TrainConfig
from dhpo_suite.train.embedded.reward import grade_rewards, heldout_reward, unmarked_share
from dhpo_suite.train.embedded.rollout import Rollout, encode_prompts, sample
from dhpo_suite.train.embedded.start import Start, fmt_reward, open_run
from dhpo_suite.train.embedded.trainer import StepTimer, Trainer, TrainResult
from dhpo_suite.train.embedded.update import NonFiniteUpdate, StepBatch, old_logprobs, ppo_update
from dhpo_suite.train.objectives import ObjectiveOutput, group_advantages
from dhpo_suite.train.telemetry import TelemetryAccumulator, token_decoder

__all__ = ["ConfigError", "StepFacts", "TrainResult", "TrainingDiverged", "step_prompts", "train", "train_step"]


def train(cfg: TrainConfig, *, log: Callable[[str], None] = print, show_progress: bool = True,
          explicit: frozenset[str] | None = None) -> TrainResult:
    """Run (or resume) one embedded training run; see the module docstring for the step.

    `explicit`: the config fields the user gave (resume: any that contradicts the stored run is an error);
    None: those that differ from the defaults. Every check, and the run directory's one-writer lock, comes
    before the model is loaded.
    """
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-checkpoint "Writing model shards" bars would bury the run's own bar
    t_start = time.perf_counter()
    cfg = cfg.validate()
    torch.set_num_threads(cfg.threads)
    with open_run(cfg, explicit, log) as start:  # new | resume | done, the run directory read once and locked
        if start.kind == "done":
            return TrainResult(start.run_dir, start.last_checkpoint, start.initial,
                               start.final if start.final is not None else float("nan"), 0.0)
        return _train(start, log, show_progress, t_start)


def _train(start: Start, log: Callable[[str], None], show_progress: bool, t_start: float) -> TrainResult:
    cfg, run_dir = start.cfg, start.run_dir
    last = run_setup.restore(start, log)  # a damaged or crafted checkpoint is refused before any worker
    if torch.get_num_threads() != cfg.threads:  # vLLM's CPU worker, once run in this process, makes it a no-op
        log(f"warning: --threads {cfg.threads} did not take: torch keeps {torch.get_num_threads()} thread(s) in "
            f"this process (was vLLM run in it? its CPU worker pins torch's threads); timings will differ")
    with GraderPool(workers=cfg.grader_workers, timeout=10.0) as pool:
        # The starting model: "tiny" is warm-started here (once per recipe and seed, then cached).
        task = get_task(cfg.task)
        base_dir = run_setup.resolve_model_dir(cfg, task, run_setup.sft_accuracy_fn(cfg, task, pool), log)
        t = run_setup.build(cfg, base_dir, pool, log, last)
        acc, timer = TelemetryAccumulator(t.spec, decode=token_decoder(t.tokenizer)), StepTimer()
        initial = evaluate(t) if t.start_step == 1 else start.initial
        final = initial if initial is not None else float("nan")
        log(f"run directory: {run_dir}   (watch it: dhpo-suite dashboard {run_dir.parent})")
        with RunWriter(run_dir, t.manifest, resume=cfg.resume) as writer, \
                run_setup.progress_bar(show_progress, cfg.steps, t.start_step - 1) as advance, \
                open_live(run_dir, writer.manifest, cfg.logger, warn=log) as mirrors:  # --logger: TensorBoard, W&B
            for step in range(t.start_step, cfg.steps + 1):
                timer.reset()
                acc.reset()
                facts = train_step(t, step, acc, timer)  # rollout -> rewards -> advantages -> update
                extra = _extra(timer, facts, cfg)
                if step == 1 and initial is not None:
                    extra["eval/heldout_reward_initial"] = initial
                if step == cfg.steps or (cfg.eval_every and step % cfg.eval_every == 0):
                    final = extra["eval/heldout_reward"] = evaluate(t)
                record = acc.to_record(step, grad_norm=facts.grad_norm, lr=facts.lr, extra=extra)
                record.attach_prompts(facts.prompts, facts.golds, cfg.group_size)  # what the kept responses answered
                writer.write_step(record)
                mirrors.submit(record)  # a queue put: the mirrors run on their own thread
                if step % cfg.checkpoint_every == 0 or step == cfg.steps:
                    save_checkpoint(writer, step, t.model, t.tokenizer, t.optimizer, t.scheduler, t.generator)
                advance(step, facts.reward, final)
    wall = time.perf_counter() - t_start
    log(f"done: {cfg.steps} steps in {wall:.0f} s; held-out reward {fmt_reward(initial)} -> {fmt_reward(final)}")
    log(f"open the dashboard: dhpo-suite dashboard {run_dir.parent}")
    return TrainResult(run_dir, cfg.steps, initial, final, wall)


@dataclass(frozen=True)
class StepFacts:
    """What one step reports beside the telemetry accumulator's record."""

    reward: float  # mean reward of the step's N responses
    grad_norm: float  # mean pre-clip gradient norm over the step's optimizer steps
    tokens: int  # response tokens sampled
    unmarked_share: float  # share of verdicts from the grader's no-marker fallback
    lr: float  # the learning rate after the step's scheduler step
    prompts: list[str]  # each prompt's problem as the user turn shows it
    golds: list[str]  # each prompt's gold answer


def step_prompts(problems: list[dict[str, Any]], n: int, seed: int, step: int) -> list[dict[str, Any]]:
    """The step's prompts: a seeded draw without replacement (same for a (seed, step), resume included)."""
    return random.Random(f"prompts/{seed}/{step}").sample(problems, n)


def train_step(t: Trainer, step: int, acc: TelemetryAccumulator, timer: StepTimer) -> StepFacts:
    """One RL step: rollout -> rewards -> advantages -> update; telemetry is fed along the way."""
    cfg, G = t.cfg, t.cfg.group_size
    batch = step_prompts(t.problems, cfg.prompts_per_step, cfg.seed, step)
    with timer.phase("rollout"), t.compute.autocast():
        prompts = encode_prompts(t.tokenizer, [t.task.messages(p) for p in batch])
        roll = sample(t.model, t.tokenizer, prompts, G, t.max_new_tokens, temperature=cfg.temperature,
                      seed=cfg.seed * 1_000_003 + step)
    with timer.phase("reward"):
        golds = [p["answer"] for p in batch for _ in range(G)]
        rewards, verdicts = grade_rewards(t.pool, roll.texts, golds, t.task.bench, unmarked=cfg.reward_unmarked)
    rewards = rewards.to(t.compute.device)
    advantages = group_advantages(rewards, G)  # eq. 1
    with timer.phase("telemetry"):
        acc.add_rollout(rewards, roll.lengths, roll.truncated, G)
    with timer.phase("update"):
        with t.compute.autocast():
            old = old_logprobs(t.model, roll, cfg.chunk_tokens)
        norms = _checked_update(step, t, roll, old, advantages, acc, timer)
    return StepFacts(reward=float(rewards.mean()), grad_norm=sum(norms) / len(norms), tokens=int(roll.lengths.sum()),
                     unmarked_share=unmarked_share(verdicts), lr=float(t.scheduler.get_last_lr()[0]),
                     prompts=[t.task.messages(p)[-1]["content"] for p in batch], golds=[p["answer"] for p in batch])


class TrainingDiverged(RuntimeError):
    """A step whose loss or gradient norm is not finite: the run stops (manifest "failed", checkpoints kept)."""


def _checked_update(step: int, t: Trainer, roll: Rollout, old: torch.Tensor, advantages: torch.Tensor,
                    acc: TelemetryAccumulator, timer: StepTimer) -> list[float]:
    """ppo_update; a non-finite loss or gradient norm stops the run naming the step (before the optimizer steps)."""
    cfg = t.cfg
    try:
        return ppo_update(t.model, t.optimizer, t.scheduler, StepBatch(roll, old, advantages), t.objective,
                          epochs=cfg.ppo_epochs, mini_batches=cfg.mini_batches, max_grad_norm=cfg.max_grad_norm,
                          chunk_tokens=cfg.chunk_tokens, generator=t.generator,
                          telemetry=_TimedUpdates(acc, timer), micro_batch=cfg.micro_batch,
                          forward_context=t.compute.autocast)
    except NonFiniteUpdate as e:
        raise TrainingDiverged(f"step {step}: {e}; the run stopped before the update (its manifest says failed, "
                               f"its complete checkpoints are kept)") from None


class _TimedUpdates:
    """What `ppo_update` feeds each micro-batch's objective output to: the accumulator, timed as telemetry
    (a phase nested in the update, so time/update_s excludes it)."""

    def __init__(self, acc: TelemetryAccumulator, timer: StepTimer) -> None:
        self.acc, self.timer = acc, timer

    def add_update(self, output: ObjectiveOutput, *, response_ids: torch.Tensor, token_ids: torch.Tensor,
                   old_log_prob: torch.Tensor, epoch: int) -> None:
        with self.timer.phase("telemetry"):
            self.acc.add_update(output, response_ids=response_ids, token_ids=token_ids, old_log_prob=old_log_prob,
                                epoch=epoch)


def evaluate(t: Trainer) -> float:
    """eval/heldout_reward: mean reward of one sample per held-out problem (fixed seed)."""
    with t.compute.autocast():
        return heldout_reward(t.model, t.tokenizer, t.task, t.heldout, t.pool, max_new_tokens=t.max_new_tokens,
                              temperature=t.cfg.temperature, seed=t.cfg.seed + 7)


def _extra(timer: StepTimer, facts: StepFacts, cfg: TrainConfig) -> dict[str, float]:
    s = timer.s
    update_tokens = facts.tokens * cfg.ppo_epochs
    return {**{f"time/{phase}_s": s.get(phase, 0.0) for phase in ("rollout", "reward", "update", "telemetry")},
            "throughput/rollout_tok_s": facts.tokens / max(s.get("rollout", 1e-9), 1e-9),
            "throughput/update_tok_s": update_tokens / max(s.get("update", 1e-9), 1e-9),
            "reward/unmarked_share": facts.unmarked_share}
