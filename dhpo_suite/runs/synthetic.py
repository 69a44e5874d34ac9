"""Synthetic runs: realistic fake run directories without torch (dashboard tests and demos).

    write_synthetic_run("runs/demo-dhpo", steps=200, algo="dhpo-e", collapse_at=120)

Each step simulates a small rollout (prompts × group responses × tokens) with numpy — entropy, log-ratios,
rewards, lengths — applies the algorithm's trust regions and PPO clip semantics, and reduces it with the
same TelemetryState path as real training (dhpo_suite.runs.reference), so metric names, histogram names
and edges, outlier and sample schemas are exactly those of a real run. With `collapse_at=k`, from step k
on token entropy shrinks geometrically, the policy drifts (|log r| grows, more clipping) and reward
stalls: the signature the dashboard's collapse view looks for.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .bins import TelemetrySpec
from .manifest import Manifest
from .reference import add_update_numpy
from .records import StepRecord
from .state import TelemetryState
from .writer import RunWriter

__all__ = ["write_synthetic_run", "synthetic_record", "synthetic_manifest", "ALGO_BOUNDS"]

ALGO_BOUNDS: dict[str, dict[str, tuple[float, float] | None]] = {
    "grpo": {"token": (0.8, 1.2), "sequence": None},
    "gspo": {"token": None, "sequence": (1 - 3e-4, 1 + 4e-4)},
    "gmpo": {"token": (math.exp(-0.4), math.exp(0.4)), "sequence": None},
    "cispo": {"token": (0.0, 1.2), "sequence": None},
    "sapo": {"token": None, "sequence": None},
    "dhpo-a": {"token": (0.8, 1.28), "sequence": (0.8, 1.28), "mixed": (0.8, 1.28)},
    "dhpo-e": {"token": (0.8, 1.28), "sequence": (0.8, 1.28), "mixed": (0.8, 1.28)},
}
"""Trust regions (ratio space) per branch, as the objective library reports them (paper defaults)."""
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
    if algo not in ALGO_BOUNDS:
        raise ValueError(f"unknown algo {algo!r}; choose one of {sorted(ALGO_BOUNDS)}")
    return Manifest(
        algorithm=algo, hparams={"eps_low": 0.2, "eps_high": 0.28, "lr": 1e-6, "group_size": group_size},
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
    if algo not in ALGO_BOUNDS:
        raise ValueError(f"unknown algo {algo!r}; choose one of {sorted(ALGO_BOUNDS)}")
    rng = np.random.default_rng(rng) if isinstance(rng, int) else rng
    st = TelemetryState(synthetic_spec(max_len))
    _simulate_step(st, rng, algo, step, collapse_at, prompts, group_size, max_len)
    lr = 1e-6 * min(1.0, step / 10)
    return st.to_record(step, grad_norm=float(rng.gamma(4, 0.1)), lr=lr, decode=_decode)


def _decode(ids) -> list[str]:
    return [_WORDS[int(i) % len(_WORDS)] for i in ids]


def _simulate_step(st, rng, algo, step, collapse_at, prompts, group_size, max_len) -> None:
    collapse = 0 if collapse_at is None else max(0, step - collapse_at)
    n = prompts * group_size
    # Rollout: accuracy rises then stalls (and slips) after a collapse.
    p_correct = min(0.85, 0.2 + 0.004 * step) - 0.002 * collapse
    difficulty = rng.normal(0, 1.0, prompts).repeat(group_size)
    correct = rng.random(n) < 1 / (1 + np.exp(-(math.log(p_correct / (1 - p_correct)) - difficulty)))
    rewards = correct.astype(np.float64)
    lengths = np.clip(rng.normal(0.5 * max_len + 0.1 * step, 0.2 * max_len, n), 4, max_len).astype(np.int64)
    grouped = rewards.reshape(prompts, group_size)
    adv = ((grouped - grouped.mean(1, keepdims=True)) / (grouped.std(1, keepdims=True) + 1e-6)).reshape(-1)
    rids = np.arange(n, dtype=np.int64) + step * 1_000_000
    st.add_responses(response_id=rids, reward=rewards, length=lengths, truncated=lengths >= max_len,
                     correct=correct, group_id=rids // group_size)
    # Tokens: log-normal entropy whose median shrinks 10 %/step after the collapse.
    mask = np.arange(max_len)[None] < lengths[:, None]
    median = 0.6 * 0.9**collapse
    entropy = (median * rng.lognormal(0, 1.5, (n, max_len))).astype(np.float32)
    drift = 0.08 * (1 + 0.1 * collapse)  # the policy moves further per step once it collapses
    log_ratio = np.clip(rng.normal(0, drift, (n, max_len)) * (0.3 + np.sqrt(entropy)), -20, 20).astype(np.float32)
    A = np.broadcast_to(adv[:, None], mask.shape).astype(np.float32)
    branches, w = _branches(algo, log_ratio, entropy, mask, A)
    old_lp = (-entropy * rng.random((n, max_len))).astype(np.float32)
    add_update_numpy(
        st, mask=mask, advantages=A, log_ratio=log_ratio, branches=branches, response_ids=rids,
        loss_mat=-A * np.exp(log_ratio), entropy=entropy, w=w,
        token_ids=rng.integers(0, 14, (n, max_len)), old_log_prob=old_lp,
    )


def _branches(algo, log_ratio, entropy, mask, A):
    """Branch ratios and flags with the objective library's semantics (DHPO: branch clipping, eq. 10)."""
    r = np.exp(log_ratio)
    seq = np.exp((log_ratio * mask).sum(-1) / np.maximum(mask.sum(-1), 1))[:, None] * np.ones_like(r)
    bounds = ALGO_BOUNDS[algo]
    if not algo.startswith("dhpo"):
        out = {b: _flags(ratio, bounds[b], mask, A, None) for b, ratio in (("token", r), ("sequence", seq))}
        return out, None
    if algo == "dhpo-e":
        lo = np.where(mask, entropy, np.inf).min(-1, keepdims=True)
        hi = np.where(mask, entropy, -np.inf).max(-1, keepdims=True)
        w = np.where(mask, (entropy - lo) / np.maximum(hi - lo, 1e-6), 0).astype(np.float32)
    else:
        w = np.where(mask, 0.5, 0.0).astype(np.float32)
    m = w * r + (1 - w) * seq
    m_clip = w * np.clip(r, *bounds["token"]) + (1 - w) * np.clip(seq, *bounds["sequence"])
    active = mask & (-A * m_clip > -A * m)
    out = {"token": _flags(r, bounds["token"], mask, A, active),
           "sequence": _flags(seq, bounds["sequence"], mask, A, active),
           "mixed": _flags(m, bounds["mixed"], mask, A, active, inside_too=True)}
    return out, w


def _flags(ratio, bounds, mask, A, active, inside_too=False):
    """Branch fields. binding = outside on that side and the clipped side of the min is active
    (`active` None: plain PPO clip of this branch, i.e. binding = outside on the side A's sign selects)."""
    ratio = ratio.astype(np.float32)
    none = np.zeros(mask.shape, dtype=bool)
    if bounds is None:
        return {"ratio": ratio, "low": None, "high": None, "outside_low": none, "outside_high": none,
                "binding_low": none, "binding_high": none}
    low, high = bounds
    ol, oh = mask & (ratio < low), mask & (ratio > high)
    act = mask if active is None else active
    bl, bh = (act, act) if inside_too else (ol & act, oh & act)
    return {"ratio": ratio, "low": float(low), "high": float(high), "outside_low": ol, "outside_high": oh,
            "binding_low": bl & (A < 0), "binding_high": bh & (A > 0)}
