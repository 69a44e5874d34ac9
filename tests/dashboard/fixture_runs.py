"""Small hand-shaped runs for the dashboard tests, written through dhpo_suite.runs (RunWriter, eval_results).

Values are chosen so tests can assert on what the figures show: entropy 0.8 → 0.08 and mean length
200 → 60 from `collapse_at` on; token clip fractions 0.01·(1 + step/steps); one eval per `eval_every` steps
with accuracy 0.1 + step/100 on two benchmarks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dhpo_suite.runs import Histogram, Manifest, RunWriter, StepRecord, TelemetrySpec
from dhpo_suite.runs import eval_results as er
from dhpo_suite.train.telemetry.bins import entropy_edges, log_ratio_edges, weight_edges

SPEC = TelemetrySpec()
BOUNDS = {"token": (0.8, 1.28), "sequence": (1 - 3e-4, 1 + 4e-4), "mixed": (0.8, 1.28)}
BENCHES = ("aime24", "math500")


def entropy_at(step: int, collapse_at: int | None) -> float:
    return 0.08 if collapse_at is not None and step >= collapse_at else 0.8


def length_at(step: int, collapse_at: int | None) -> float:
    return 60.0 if collapse_at is not None and step >= collapse_at else 200.0


def _scalars(step: int, steps: int, collapse_at: int | None, branches: tuple[str, ...], rng) -> dict[str, float]:
    h, length = entropy_at(step, collapse_at), length_at(step, collapse_at)
    out = {
        "entropy/mean": h, "entropy/p10": h / 20, "entropy/p50": h / 2, "entropy/p90": 2 * h, "entropy/p99": 5 * h,
        "entropy/frac_below_0.01": 0.1 if h > 0.5 else 0.6,
        "length/mean": length, "length/p50": length, "length/p90": 1.5 * length, "length/max": 2 * length,
        "length/truncated_frac": 0.05, "reward/mean": 0.2 + 0.5 * step / steps, "reward/std": 0.4,
        "groups/all_correct_frac": 0.1 + 0.3 * step / steps, "groups/all_wrong_frac": 0.4 - 0.3 * step / steps,
        "kl/k1": 1e-3, "kl/k3": 5e-4 + 1e-5 * step, "grad_norm": 1.0 + 0.1 * rng.standard_normal(), "lr": 1e-6,
    }
    for b in branches:
        out[f"ratio/{b}/mean"] = 1.0
        base = 0.01 * (1 + step / steps)
        out |= {f"clip/{b}/outside_low": base, f"clip/{b}/outside_high": 2 * base,
                f"clip/{b}/binding_low": base / 2, f"clip/{b}/binding_high": base}
        out[f"clip/{b}/binding"] = 1.5 * base
    out["clip/token/binding_kept"] = 0.4 if "mixed" in branches else 0.0  # the trust-region leak: 40 % vs 0
    if "mixed" in branches:
        out |= {"w/mean": 0.5, "w/p10": 0.2, "w/p50": 0.5, "w/p90": 0.8}
    return out


def _distributions(step: int, collapse_at: int | None, branches: tuple[str, ...], rng) -> dict[str, Histogram]:
    e = entropy_edges(SPEC.entropy_bins_per_decade)
    ent = rng.lognormal(np.log(entropy_at(step, collapse_at) / 2), 1.5, 2000)
    out = {"entropy": Histogram(e, np.histogram(np.clip(ent, 0, 99), e)[0])}
    for b in branches:
        lo, hi = BOUNDS[b]
        edges = log_ratio_edges(lo, hi, SPEC.log_ratio_inside_bins, SPEC.log_ratio_outside_bins)
        for sign in ("pos", "neg", "zero"):
            x = rng.normal(0.0, 0.05 * (hi - lo) + 0.002 * step, 500)
            out[f"log_ratio/{b}/{sign}"] = Histogram(edges, np.histogram(np.clip(x, -19, 19), edges)[0])
    if "mixed" in branches:
        w = weight_edges(SPEC.weight_bins)
        out["w"] = Histogram(w, np.histogram(rng.uniform(0, 1, 500), w)[0])
    return out


def _outliers(step: int, branches: tuple[str, ...]) -> list[dict]:
    """Three per branch, from responses k = 0, 1, 2 (recorded beside the samples), at positions 3 + k; k = 1
    has advantage 0 and does not bind (it carries no gradient)."""
    return [dict(branch=b, side="high", distance=0.5 - 0.1 * k, log_ratio=np.log(1.28) + 0.5 - 0.1 * k,
                 binding=k % 2 == 0, response_id=k, position=3 + k, epoch=0, token_id=100 + k,
                 token_text=f"tok{step}_{b}_{k}", context_left="left ", context_right=" right", entropy=0.5,
                 w=0.5 if b == "mixed" else None, advantage=0.0 if k == 1 else 1.0)  # k = 1: no gradient
            for b in branches for k in range(3)]


def sample_advantage(step: int, r: int) -> float:
    """Advantage of sampled response r at `step`: differs from step to step, so a stale label shows."""
    return round((1.0 - 2 * ((r + step) % 2)) * (1 + step / 100), 2)


def _samples(step: int, mixed: bool, ids=None, source: str = "sample") -> list[dict]:
    """Responses 10·step + r (the sampled ones), or `ids` (the responses the outlier tokens come from)."""
    texts = ["The", " answer", " is", " \\boxed{", "4", "}"]
    n = len(texts)
    ids = [10 * step + r for r in range(2)] if ids is None else ids
    return [dict(response_id=rid, epoch=0, reward=float((r + step) % 2 == 0), source=source,
                 prompt=f"What is 2 + 2? (step {step})", gold="4",
                 advantage=sample_advantage(step, r), length=n,
                 token_id=list(range(n)), token_text=texts, log_prob=[-0.5] * n, old_log_prob=[-0.4] * n,
                 entropy=[0.1, 0.2, 1.5, 0.05, 2.0, 0.01], w=[0.5] * n if mixed else None,
                 token_ratio=[0.7, 1.0, 1.1, 1.5, 0.95, 1.0], seq_ratio=[1.0002] * n,
                 mixed_ratio=[0.85] * n if mixed else None, clip_token=[1, 0, 0, 2, 0, 0],
                 clip_sequence=[0] * n, clip_mixed=[0] * n if mixed else None)
            for r, rid in enumerate(ids)]


def chatml(problem: str) -> str:
    """A prompt as the evaluator records it: the problem inside Qwen's ChatML chat template."""
    return (f"<|im_start|>system\nPlease reason step by step, and put your final answer within \\boxed{{}}."
            f"<|im_end|>\n<|im_start|>user\n{problem}<|im_end|>\n<|im_start|>assistant\n")


def write_eval(run_dir: Path, step: int) -> Path:
    """A checkpoint evaluation: 2 benchmarks × 3 problems × 4 samples; accuracy 0.1 + step/100."""
    return write_eval_dir(er.checkpoint_eval_dir(run_dir, step), 0.1 + step / 100)


def write_eval_dir(folder: Path, acc: float) -> Path:
    """An evaluation folder (summary.json + samples) whose benchmarks and AVG all read `acc`."""
    benchmarks = {}
    for bench in BENCHES:
        records = [dict(bench=bench, problem_id=f"{bench}-{p}", sample=s, prompt=chatml(f"Problem {p} of {bench}?"),
                        response=f"... so \\boxed{{{p + (s % 2)}}}", n_tokens=20 + s, finish_reason="stop",
                        gold=[str(p)], extracted=str(p + (s % 2)), correct=s % 2 == 0, status="ok", reason="match")
                   for p in range(3) for s in range(4)]
        with er.SampleWriter(er.samples_path(folder, bench)) as w:
            w.write_batch(records)
        benchmarks[bench] = {"avg@4": acc, "headline": "avg@4", "n_problems": 3, "n_samples": 4}
    er.write_json_atomic(folder / er.SUMMARY, {"results_version": 1, "model": "ckpt", "benchmarks": benchmarks,
                                                "AVG": acc, "settings": {}})
    return folder


def write_run(path: Path, steps: int = 30, algo: str = "dhpo-e", collapse_at: int | None = None, seed: int = 0,
              close: str | None = "completed", eval_every: int = 10) -> Path:
    """A run of `steps` steps with full telemetry; `close=None` leaves it "running"."""
    rng = np.random.default_rng(seed)
    mixed = algo.startswith("dhpo")
    branches = ("token", "sequence", "mixed") if mixed else ("token", "sequence")
    manifest = Manifest(algorithm=algo, hparams={"eps_low": 0.2, "eps_high": 0.28}, model="tiny-qwen3",
                        task="arithmetic", backend="embedded", seed=seed, telemetry=SPEC.to_dict())
    w = RunWriter(path, manifest, compact_every=10, fsync=False)
    for step in range(steps):
        w.write_step(StepRecord(step, _scalars(step, steps, collapse_at, branches, rng),
                                _distributions(step, collapse_at, branches, rng), _outliers(step, branches),
                                _samples(step, mixed),
                                outlier_responses=_samples(step, mixed, ids=[0, 1, 2], source="outlier")))
        if eval_every and step and step % eval_every == 0:
            w.checkpoint_dir(step)
            w.checkpoint_complete(step)
            write_eval(path, step)
    if close:
        w.close(close)
    return path


def write_lr_sweep(root: Path, steps: int = 40, seeds: int = 3) -> dict[str, list[Path]]:
    """Two sweeps side by side that differ only in lr: root/lr-small (lr 1e-4) and root/lr-large (lr 2e-3),
    each GRPO and DHPO-E × `seeds` seeds, like a researcher's grid plus a high-lr one. Held-out reward every 10
    steps (0.2 + 0.05·seed + ..., higher for DHPO-E), entropy falling 4x faster at the large lr. The large-lr
    runs log the held-out reward at steps offset by 5, so a mean over both would zigzag between them."""
    out: dict[str, list[Path]] = {}
    for folder, lr, offset in (("lr-small", 1e-4, 0), ("lr-large", 2e-3, 5)):
        for algo in ("grpo", "dhpo-e"):
            for seed in range(seeds):
                path = root / folder / f"{algo}-s{seed}"
                hp = {"eps_low": 0.2, "eps_high": 0.28, "lr": lr, "group_size": 8}
                config = {"seed": seed, "out": str(path), "threads": 1, "steps": steps, "lr": lr}
                w = RunWriter(path, Manifest(algorithm=algo, hparams=hp, model="tiny", task="arithmetic",
                                             backend="embedded", seed=seed, config=config), fsync=False)
                gain = 0.05 if algo == "dhpo-e" else 0.0
                decay = 0.01 if lr < 1e-3 else 0.04
                for step in range(1, steps + 1):
                    s = {"entropy/mean": 0.8 * (1 - decay) ** step + 0.01 * seed,
                         "length/mean": 100.0 - step * (10 * decay) + seed, "reward/mean": 0.3 + step / 200}
                    if step == 1:
                        s["eval/heldout_reward_initial"] = 0.1
                    if (step + offset) % 10 == 0:
                        s["eval/heldout_reward"] = 0.2 + 0.05 * seed + gain + step / 400 + (0.1 if offset else 0)
                    w.write_step(StepRecord(step, s))
                w.close()
                out.setdefault(folder, []).append(path)
    return out
