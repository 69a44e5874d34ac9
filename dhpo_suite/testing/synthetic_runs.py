"""Synthetic runs: realistic fake run directories (dashboard tests, demos and benchmarks/dashboard.py).

    write_synthetic_run("runs/demo-dhpo", steps=200, algo="dhpo-e", collapse_at=120)

Each step simulates a small rollout (prompts × group responses × tokens) with numpy — entropy, log-ratios,
rewards, lengths — then scores it with the objective library itself (`get_objective(algo)`, its paper
defaults: the same ratios, mixing weight, trust regions, clipping and per-token loss as a real run; no
formula is repeated here) and reduces it with the same telemetry as real training
(dhpo_suite.train.telemetry.TelemetryAccumulator), so metric names, histogram names and edges, outlier and sample
schemas are exactly those of a real run. With `collapse_at=k`, from step k on token entropy shrinks geometrically, the
policy drifts (|log r| grows, more clipping) and reward stalls: the signature the dashboard's collapse view
looks for. Importing this module does not import torch; writing a record does (the objective library and
the telemetry).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from dhpo_suite.runs.manifest import Manifest
from dhpo_suite.runs.records import StepRecord
from dhpo_suite.runs.telemetry_spec import TelemetrySpec
from dhpo_suite.runs.writer import RunWriter

__all__ = ["write_synthetic_run", "synthetic_record", "synthetic_manifest", "ALGOS", "ALGO_BOUNDS"]

ALGOS = ("grpo", "gspo", "gmpo", "cispo", "sapo", "dhpo-a", "dhpo-e")
"""The objectives a synthetic run can simulate (each with the library's defaults)."""


def __getattr__(name: str) -> dict[str, dict[str, tuple[float, float] | None]]:
    """ALGO_BOUNDS: trust regions (ratio space) per branch, as the objective library reports them with its
    defaults; computed on use, as the objective library imports torch."""
    if name != "ALGO_BOUNDS":
        raise AttributeError(name)
    import torch

    from dhpo_suite.train.objectives import get_objective

    one = torch.zeros(1, 2)
    bounds = {}
    for algo in ALGOS:
        out = get_objective(algo)(one, one, torch.ones(1), torch.ones(1, 2, dtype=torch.bool), entropy=one)
        bounds[algo] = {k: None if b.high is None else (b.low, b.high) for k, b in out.branches.items()}
    return bounds


_WORDS = ["The", " answer", " is", " \\boxed{", "4", "2", "}", ".", " Let", " x", " =", " so", " we", " get"]


def write_synthetic_run(
    path: Path | str,
    steps: int = 200,
    algo: str = "dhpo-e",
    collapse_at: int | None = None,
    seed: int = 0,
    *,
    prompts: int = 8,
    group_size: int = 8,
    max_len: int = 128,
    compact_every: int = 25,
    checkpoint_every: int = 50,
) -> Path:
    """Write a complete synthetic run directory (status "completed") and return its path.

    Steps 1..steps; `prompts × group_size` responses of up to `max_len` tokens per step; a (fake, config.json
    only) complete checkpoint every `checkpoint_every` steps and at the end. ~20 ms per step.
    """
    rng = np.random.default_rng(seed)
    with RunWriter(path, synthetic_manifest(algo, seed, group_size, collapse_at, max_len), compact_every=compact_every,
                   fsync=False) as w:
        for step in range(1, steps + 1):
            w.write_step(synthetic_record(step, algo, rng, collapse_at, prompts=prompts, group_size=group_size,
                                          max_len=max_len))
            if step % checkpoint_every == 0 or step == steps:
                (w.checkpoint_dir(step) / "config.json").write_text('{"synthetic": true}')
                w.checkpoint_complete(step)
    return Path(path)


def synthetic_spec(max_len: int = 128) -> TelemetrySpec:
    return TelemetrySpec(max_response_length=max_len, top_k=16)


def synthetic_manifest(
    algo: str, seed: int = 0, group_size: int = 8, collapse_at: int | None = None, max_len: int = 128
) -> Manifest:
    from dhpo_suite.train.objectives import get_objective

    if algo not in ALGOS:
        raise ValueError(f"unknown algo {algo!r}; choose one of {sorted(ALGOS)}")
    return Manifest(
        algorithm=algo, hparams={**get_objective(algo).hparams, "lr": 1e-6, "group_size": group_size},
        model="synthetic", task="synthetic-arithmetic", backend="synthetic", seed=seed,
        telemetry=synthetic_spec(max_len).to_dict(), config={"synthetic": True, "collapse_at": collapse_at},
    )


def synthetic_record(
    step: int,
    algo: str = "dhpo-e",
    rng: np.random.Generator | int = 0,
    collapse_at: int | None = None,
    *,
    prompts: int = 8,
    group_size: int = 8,
    max_len: int = 128,
) -> StepRecord:
    """One simulated step's StepRecord (what TelemetryAccumulator.to_record returns in training)."""
    if algo not in ALGOS:
        raise ValueError(f"unknown algo {algo!r}; choose one of {sorted(ALGOS)}")
    from dhpo_suite.train.telemetry import TelemetryAccumulator

    rng = np.random.default_rng(rng) if isinstance(rng, int) else rng
    acc = TelemetryAccumulator(synthetic_spec(max_len), decode=_decode)
    _simulate_step(acc, rng, algo, step, collapse_at, prompts, group_size, max_len)
    lr = 1e-6 * min(1.0, step / 10)
    rec = acc.to_record(step, grad_norm=float(rng.gamma(4, 0.1)), lr=lr)
    for row in rec.samples + rec.outlier_responses:  # the prompt and gold answer of the response's group
        group = int(row["response_id"]) // group_size
        a, b = (group * 37 + step) % 90 + 10, (group * 53 + 7 * step) % 90 + 10
        row["prompt"], row["gold"] = f"Compute {a} + {b}. Put the final answer in \\boxed{{}}.", str(a + b)
    return rec


def _decode(ids) -> list[str]:
    return [_WORDS[int(i) % len(_WORDS)] for i in ids]


def _simulate_step(acc, rng, algo, step, collapse_at, prompts, group_size, max_len) -> None:
    import torch

    from dhpo_suite.train.objectives import group_advantages

    collapse = 0 if collapse_at is None else max(0, step - collapse_at)
    n = prompts * group_size
    # Rollout: accuracy rises then stalls (and slips) after a collapse.
    p_correct = min(0.85, 0.2 + 0.004 * step) - 0.002 * collapse
    difficulty = rng.normal(0, 1.0, prompts).repeat(group_size)
    correct = rng.random(n) < 1 / (1 + np.exp(-(math.log(p_correct / (1 - p_correct)) - difficulty)))
    rewards = correct.astype(np.float64)
    lengths = np.clip(rng.normal(0.5 * max_len + 0.1 * step, 0.2 * max_len, n), 4, max_len).astype(np.int64)
    adv = group_advantages(torch.from_numpy(rewards), group_size).numpy()  # Eq. 1, from the objective library
    rids = np.arange(n, dtype=np.int64) + step * 1_000_000
    acc.add_rollout(rewards, lengths, lengths >= max_len, group_size, response_ids=rids, correct=correct)
    # Tokens: log-normal entropy whose median shrinks 10 %/step after the collapse.
    mask = np.arange(max_len)[None] < lengths[:, None]
    median = 0.6 * 0.9**collapse
    entropy = (median * rng.lognormal(0, 1.5, (n, max_len))).astype(np.float32)
    drift = 0.08 * (1 + 0.1 * collapse)  # the policy moves further per step once it collapses
    log_ratio = np.clip(rng.normal(0, drift, (n, max_len)) * (0.3 + np.sqrt(entropy)), -20, 20).astype(np.float32)
    A = np.broadcast_to(adv[:, None], mask.shape).astype(np.float32)
    old_lp = (-entropy * rng.random((n, max_len))).astype(np.float32)
    token_ids = rng.integers(0, 14, (n, max_len))
    acc.add_update(_score(algo, old_lp, log_ratio, A, mask, entropy), response_ids=rids,
                   token_ids=_tensor(token_ids), old_log_prob=_tensor(old_lp))


def _tensor(a: np.ndarray):
    import torch

    return torch.from_numpy(np.ascontiguousarray(a))


def _score(algo, old_lp, log_ratio, A, mask, entropy):
    """The objective library's ObjectiveOutput for the simulated tokens."""
    from dhpo_suite.train.objectives import get_objective

    old = _tensor(old_lp)
    return get_objective(algo)(old + _tensor(log_ratio), old, _tensor(A), _tensor(mask), entropy=_tensor(entropy))
