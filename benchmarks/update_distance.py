"""Update distance: can a setting tell the arms apart at all? (issue 26, item 2's manipulation check)

At a checkpoint of a run, every arm takes ONE RL step from the same state (weights, AdamW moments, learning
rate, mini-batch shuffle) on the same rollout (the prompts, samples and advantages the run's next step draws),
and we measure how far each arm's update lands from the reference arm's (GRPO 0.2/0.2) in function space:

    Δ_a  = log π_after_a(y) − log π_before(y)   on held-out responses y (sampled once from π_before), per token
    d_a  = rms(Δ_a − Δ_ref)                      the arm's distance from GRPO's update
    yard = rms(Δ'_ref − Δ_ref)                   the yardstick: GRPO's update on a SECOND rollout of the same
                                                 prompts (what sampling noise alone moves an update by)
    ratio_a = d_a / yard
    (and, beside them, each update's own size rms(Δ_a) and its cosine with Δ_ref: a distance can be step size alone)

A ratio of a few % says the arms make near-identical updates: outcome differences between them can only be
noise or step size, and the setting cannot resolve a claim about their mechanism. Writes
`update_distance.json` into the sweep directory (format in docs/sweep.md; compare reads `distance`, `pairs` and
`yardstick`). Run: `python benchmarks/update_distance.py SWEEP/grpo-s100 [--steps 10,20]`.

The arms are the sweep's own labels (`sweep_arms`): every run under the sweep directory is labelled as `compare`
labels it (science.compare.run_labels), and each label's objective, objective settings and update settings (lr,
weight decay, grad clip, epochs, mini-batches) come from its runs' manifests; the probed runs' label is the
reference. An arm whose runs draw another rollout (group size, prompts per step) or follow another lr schedule
(warm-up) cannot start from the probed run's state: it is skipped, and the file says why.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from dhpo_suite.grading import GraderPool
from dhpo_suite.models.local import load_model
from dhpo_suite.runs import Manifest, RunReader, list_runs
from dhpo_suite.runs.safe_write import WriteError, atomic_write_bytes
from dhpo_suite.science.compare import run_labels
from dhpo_suite.tasks import get_task
from dhpo_suite.train.embedded.checkpoint import read_trainer_state
from dhpo_suite.train.embedded.config import TrainConfig
from dhpo_suite.train.embedded.loop import step_prompts
from dhpo_suite.train.embedded.reward import grade_rewards
from dhpo_suite.train.embedded.rollout import encode_prompts, sample
from dhpo_suite.train.embedded.update import StepBatch, old_logprobs, ppo_update
from dhpo_suite.train.objectives import get_objective, group_advantages
from dhpo_suite.train.telemetry import clip_flags
from dhpo_suite.train.telemetry.kept import kept_share

__all__ = ["Arm", "FORMAT_VERSION", "arm_of", "main", "merge", "probe_checkpoint", "probe_run", "sweep_arms"]

FORMAT_VERSION = 1
SECOND_ROLLOUT_OFFSET = 7_919  # the yardstick rollout's sampling seed = the run's own + this


UPDATE_SETTINGS = ("lr", "weight_decay", "max_grad_norm", "ppo_epochs", "mini_batches")
"""Optimisation settings (runs.SHARED_HPARAMS) an arm may hold apart from the probed run: one update uses them."""
ROLLOUT_SETTINGS = ("group_size", "prompts_per_step", "warmup_steps")
"""Settings that shape the rollout or the lr schedule: an arm must share them with the probed run."""


@dataclass(frozen=True)
class Arm:
    """One arm of the comparison: compare's label, the objective and its keywords, and the optimisation settings
    its runs recorded (SHARED_HPARAMS; one absent, as in runs older than the key: the probed run's)."""

    name: str
    algo: str
    hparams: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)


def arm_of(label: str, m: Manifest) -> Arm:
    """The arm a run of `label` stands for: its objective's resolved keywords and its recorded settings."""
    keywords = get_objective(m.algorithm).hparams  # the objective's own keys (a manifest also holds shared ones)
    return Arm(label, m.algorithm, {k: m.hparams[k] for k in keywords if k in m.hparams},
               {k: m.hparams[k] for k in UPDATE_SETTINGS + ROLLOUT_SETTINGS if m.hparams.get(k) is not None})


def _agree(a: Arm, b: Arm) -> bool:
    """Two runs' arms are one: same objective and keywords, same value for every setting both recorded."""
    shared = set(a.settings) & set(b.settings)
    return (a.algo, a.hparams) == (b.algo, b.hparams) and all(a.settings[k] == b.settings[k] for k in shared)


def sweep_arms(root: Path, reference: Path) -> tuple[Arm, ...]:
    """One arm per label of the runs under `root` (compare's labels over the same runs), the label of the run
    `reference` first, the others by name. ValueError when two runs of one label disagree or `reference` is not
    a run under `root`."""
    runs = [r for r in list_runs(root) if r.manifest is not None]
    arms: dict[str, tuple[Arm, Path]] = {}
    first = None
    for run, label in zip(runs, run_labels([r.manifest for r in runs])):
        arm = arm_of(label, run.manifest)
        seen, where = arms.setdefault(label, (arm, run.path))
        if not _agree(seen, arm):
            raise ValueError(f"{run.path} and {where} are both labelled {label!r} but their objective settings "
                             f"differ ({arm.hparams} vs {seen.hparams})")
        if run.path.resolve() == Path(reference).resolve():
            first = label
    if first is None:
        raise ValueError(f"{reference} is not a run under {root}")
    return (arms[first][0], *(arms[k][0] for k in sorted(arms) if k != first))


def _outside(arm: Arm, cfg: Any) -> str | None:
    """Why `arm` cannot start from a run of config `cfg` (None: it can)."""
    differ = [f"{k} {arm.settings[k]} (the probed run's: {getattr(cfg, k)})" for k in ROLLOUT_SETTINGS
              if k in arm.settings and arm.settings[k] != getattr(cfg, k)]
    return "another rollout or lr schedule: " + ", ".join(differ) if differ else None


MEASURE = "rms change of log pi on held-out responses (nats/token)"
ENTRIES = "checkpoints"  # the file's list of per-checkpoint entries (docs/sweep.md), not the run directory's folder


@dataclass
class _State:
    """What every arm starts from at one checkpoint."""

    model: Any
    tokenizer: Any
    trainer_state: dict[str, Any]


def _rms(x: torch.Tensor) -> float:
    return float(x.double().pow(2).mean().sqrt()) if x.numel() else float("nan")


def _cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Direction alone: a distance can come from a longer step along the same direction (effective step size)."""
    na, nb = float(a.double().norm()), float(b.double().norm())
    return float((a.double() * b.double()).sum()) / (na * nb) if na and nb else float("nan")


def _heldout_tokens(st: _State, cfg: Any, task: Any, n: int, max_new: int) -> tuple[Any, torch.Tensor]:
    """n held-out responses sampled once from the checkpoint's policy, and their log π_before (valid tokens)."""
    problems = task.make_problems(n, seed=cfg.seed, split="test")
    prompts = encode_prompts(st.tokenizer, [task.messages(p) for p in problems])
    roll = sample(st.model, st.tokenizer, prompts, 1, max_new, temperature=cfg.temperature, seed=cfg.seed + 13)
    return roll, old_logprobs(st.model, roll, cfg.chunk_tokens)[roll.response_mask]


def _rollout(st: _State, cfg: Any, task: Any, problems: list[dict], step: int, seed: int, pool: Any,
             max_new: int) -> Any:
    """The step's batch (rollout, log π_old, advantages) with sampling seed `seed`."""
    batch = step_prompts(problems, cfg.prompts_per_step, cfg.seed, step)
    prompts = encode_prompts(st.tokenizer, [task.messages(p) for p in batch])
    roll = sample(st.model, st.tokenizer, prompts, cfg.group_size, max_new, temperature=cfg.temperature, seed=seed)
    golds = [p["answer"] for p in batch for _ in range(cfg.group_size)]
    rewards, _ = grade_rewards(pool, roll.texts, golds, task.bench, unmarked=cfg.reward_unmarked)
    return StepBatch(roll, old_logprobs(st.model, roll, cfg.chunk_tokens), group_advantages(rewards, cfg.group_size))


def _one_update(st: _State, cfg: Any, arm: Arm, batch: Any, heldout: Any,
                before: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """Δ log π on the held-out tokens after one RL step of `arm` from the checkpoint's full trainer state."""
    model = copy.deepcopy(st.model)
    get = lambda k: arm.settings.get(k, getattr(cfg, k))  # noqa: E731 - the arm's setting, else the run's
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1.0)  # only steps after the update
    # The run's moments and learning rate. A copy: load_state_dict keeps the given tensors, which AdamW then updates
    # in place, so without it every arm would start from the moments the previous arm left.
    optimizer.load_state_dict(copy.deepcopy(st.trainer_state["optimizer"]))
    for group in optimizer.param_groups:  # the run's warm-up factor at this step, applied to the arm's own lr
        group["lr"] *= get("lr") / cfg.lr
        group["weight_decay"] = get("weight_decay")
    generator = torch.Generator()
    generator.set_state(st.trainer_state["generator"])  # the same mini-batch shuffle for every arm
    telemetry = _Kept()
    ppo_update(model, optimizer, scheduler, batch, get_objective(arm.algo, **arm.hparams), epochs=get("ppo_epochs"),
               mini_batches=get("mini_batches"), max_grad_norm=get("max_grad_norm"), chunk_tokens=cfg.chunk_tokens,
               generator=generator, micro_batch=cfg.micro_batch, telemetry=telemetry)
    after = old_logprobs(model, heldout, cfg.chunk_tokens)[heldout.response_mask]
    return after - before, telemetry.summary()


class _Kept:
    """An arm's clip facts over its update's passes (the first mini-batch is on-policy, the rest off-policy):
    `binding`, the share of token-passes where any branch's clip binds (GRPO: the token clip; DHPO: the mix's),
    `kept_share`, the mean κ (telemetry/kept.py: what share of the gradient the clip kept)."""

    def __init__(self) -> None:
        self.tokens, self.binding, self.kept = 0, 0, 0.0

    def add_update(self, output: Any, **_: Any) -> None:
        mask = output.response_mask.bool()
        acted = torch.zeros_like(mask)
        for br in output.branches.values():
            fl = clip_flags(br, mask)
            acted |= fl.binding_low | fl.binding_high
        self.tokens += int(mask.sum())
        self.binding += int(acted.sum())
        self.kept += float(kept_share(output)[mask].sum())

    def summary(self) -> dict[str, float]:
        n = max(self.tokens, 1)
        return {"binding": self.binding / n, "kept_share": self.kept / n}


def _config(reader: RunReader) -> TrainConfig:
    return TrainConfig(**{k: v for k, v in reader.manifest.config.items() if not k.startswith("_")})


def probe_checkpoint(run_dir: Path, step: int, *, arms: tuple[Arm, ...], heldout: int = 64,
                     pool: Any, log: Callable[[str], None] = print) -> dict[str, Any]:
    """Every arm's one-step update from checkpoint `step` of `run_dir` (the next step's rollout), against the
    reference arm (arms[0]) and the second-rollout yardstick. Returns the checkpoint's entry of the JSON file."""
    reader = RunReader(run_dir)
    cfg = _config(reader)
    ckpts = reader.checkpoints()
    if step not in ckpts:
        raise ValueError(f"--steps: {run_dir} has no complete checkpoint at step {step} (has {sorted(ckpts)})")
    task = get_task(cfg.task)
    max_new = cfg.max_new_tokens or task.max_new_tokens
    st = _State(*load_model(ckpts[step], safetensors_only=True), read_trainer_state(ckpts[step]))
    problems = task.make_problems(cfg.train_pool, seed=cfg.seed, split="train")
    seed = cfg.seed * 1_000_003 + step + 1  # loop.train_step's sampling seed for the next step
    rollouts = {"same": _rollout(st, cfg, task, problems, step + 1, seed, pool, max_new),
                "second": _rollout(st, cfg, task, problems, step + 1, seed + SECOND_ROLLOUT_OFFSET, pool, max_new)}
    held, before = _heldout_tokens(st, cfg, task, heldout, max_new)
    second, _ = _one_update(st, cfg, arms[0], rollouts["second"], held, before)
    deltas, facts = {}, {}
    for arm in arms:
        deltas[arm.name], facts[arm.name] = _one_update(st, cfg, arm, rollouts["same"], held, before)
    base = deltas[arms[0].name]
    again, _ = _one_update(st, cfg, arms[0], rollouts["same"], held, before)
    if _rms(again - base) > 1e-6 * max(_rms(base), 1e-12):  # every arm must start from the same state
        raise RuntimeError(f"{run_dir}: step {step}: the reference update is not reproducible "
                           f"(rms {_rms(again - base):.3g}); the arms would not start from the same state")
    yard = _rms(second - base)
    others = [a.name for a in arms[1:]]
    distance = {a: _rms(deltas[a] - base) for a in others}
    out: dict[str, Any] = {"run": Path(run_dir).name, "step": step, "yardstick": yard,
           "distance": distance,
           "pairs": {f"{a}|{b}": _rms(deltas[a] - deltas[b]) for i, a in enumerate(others) for b in others[i + 1:]},
           "reference_update": _rms(base), "yardstick_cosine": _cosine(second, base),
           "heldout_tokens": int(before.numel()),
           # responses with a non-zero advantage (their group holds right and wrong answers)
           "informative_share": float((rollouts["same"].advantages != 0).float().mean()),
           "arms": {a.name: {"update": _rms(deltas[a.name]), "cosine": _cosine(deltas[a.name], base),
                             **facts[a.name]} for a in arms}}
    for a in arms:
        ratio = distance.get(a.name, 0.0) / yard if yard else math.nan
        log(f"  step {step} {a.name:>24}: distance/yardstick {ratio:.3f}  binding {facts[a.name]['binding']:.2%}  "
            f"kept {facts[a.name]['kept_share']:.3f}")
    log(f"  step {step}: yardstick {yard:.4g}, {arms[0].name}'s update {_rms(base):.4g} (rms nats/token)")
    return out


def probe_run(run_dir: Path, steps: list[int] | None = None, *, arms: tuple[Arm, ...] | None = None,
              heldout: int = 64, log: Callable[[str], None] = print) -> dict[str, Any]:
    """`probe_checkpoint` at each of `steps` (default: every complete checkpoint but the last); the file's dict.
    `arms`: the reference first (default: `sweep_arms` of the run's parent, the sweep directory)."""
    reader = RunReader(run_dir)
    arms = arms or sweep_arms(Path(run_dir).parent, Path(run_dir))
    skipped = {a.name: why for a in arms if (why := _outside(a, _config(reader)))}
    for name, why in skipped.items():
        log(f"  {name}: skipped ({why})")
    arms = tuple(a for a in arms if a.name not in skipped)
    steps = steps or sorted(reader.checkpoints())[:-1] or sorted(reader.checkpoints())
    t0 = time.perf_counter()
    with GraderPool(workers=1, timeout=10.0) as pool:
        entries = [probe_checkpoint(Path(run_dir), s, arms=arms, heldout=heldout, pool=pool, log=log) for s in steps]
    return {"version": FORMAT_VERSION, "baseline": arms[0].name, "measure": MEASURE,
            "arms": [{"name": a.name, "algo": a.algo, "hparams": a.hparams, "settings": a.settings} for a in arms],
            "skipped": skipped, "heldout_responses": heldout, ENTRIES: entries,
            "wall_s": round(time.perf_counter() - t0, 1)}


def merge(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Several runs' results as one file: their checkpoints listed together (each names its run)."""
    return {**results[0], ENTRIES: [cp for r in results for cp in r[ENTRIES]],
            "wall_s": round(sum(r["wall_s"] for r in results), 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/update_distance.py", description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run directories with checkpoints, all of one label (the "
                                                      "reference arm)")
    p.add_argument("--sweep", type=Path, default=None, help="the sweep directory whose labels are the arms (default: "
                                                            "the first run's parent)")
    p.add_argument("--steps", default="", help="checkpoint steps, comma-separated (default: all but the last)")
    p.add_argument("--heldout", type=int, default=64, help="held-out responses the update is measured on")
    p.add_argument("--out", type=Path, default=None, help="JSON file (default: update_distance.json in the sweep "
                                                          "directory, where compare reads it)")
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    a = p.parse_args(argv)
    torch.set_num_threads(a.threads)
    steps = [int(s) for s in a.steps.split(",") if s.strip()] or None
    sweep = a.sweep or a.runs[0].resolve().parent
    results = []
    try:
        arms = [sweep_arms(sweep, run) for run in a.runs]  # every refusal before the first update
        if len({x[0].name for x in arms}) > 1:
            raise ValueError(f"the runs are of {len({x[0].name for x in arms})} labels "
                             f"({', '.join(sorted({x[0].name for x in arms}))}); probe runs of one label")
        for run, run_arms in zip(a.runs, arms):
            results.append(probe_run(run, steps, arms=run_arms, heldout=a.heldout,
                                     log=lambda s: print(s, file=sys.stderr)))
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = a.out or sweep / "update_distance.json"
    try:
        atomic_write_bytes(out, (json.dumps(merge(results), indent=1) + "\n").encode())
    except WriteError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
