"""Step metrics by name: a new metric is one function here plus its definition in `dhpo_suite.runs.metrics.METRICS`
(mirrored in docs/run-format.md, which shows a worked example).

Two kinds, both exact under merging micro-batches and ranks:
- a token metric maps the valid tokens of a micro-batch to one float64 value per token; the step records their
  mean over every valid token of the step (the accumulator sums them in float64 on the device);
- a response metric maps the step's merged per-response facts (numpy columns of `RESPONSE_FIELDS`, one row
  per response) to one float, computed once when the record is built.
Scalars that need counts, extrema or histograms (advantage moments, clip fractions, entropy and w percentiles) are
built by the accumulator and `record.build_scalars`.
"""

from __future__ import annotations

from functools import cached_property
from typing import Callable

import numpy as np
import torch

from dhpo_suite.runs.metrics import METRICS
from dhpo_suite.train.objectives.output import ObjectiveOutput
from dhpo_suite.train.telemetry.kept import kept_share

__all__ = ["TOKEN_METRICS", "RESPONSE_METRICS", "Tokens", "token_metric", "response_metric"]

TOKEN_METRICS: dict[str, Callable[["Tokens"], torch.Tensor]] = {}
RESPONSE_METRICS: dict[str, Callable[[dict[str, np.ndarray]], float]] = {}


def _register(registry: dict, name: str) -> Callable:
    if name not in METRICS:
        raise ValueError(f"step metric {name!r} has no definition: add it to dhpo_suite.runs.metrics.METRICS "
                         "and docs/run-format.md")
    if any(name in r for r in (TOKEN_METRICS, RESPONSE_METRICS)):
        raise ValueError(f"step metric {name!r} is registered twice")

    def deco(fn: Callable) -> Callable:
        registry[name] = fn
        return fn

    return deco


def token_metric(name: str) -> Callable:
    """Decorator: `fn(tokens: Tokens) -> (N,) float64 tensor`; the step records its mean over valid tokens."""
    return _register(TOKEN_METRICS, name)


def response_metric(name: str) -> Callable:
    """Decorator: `fn(responses: {column: (N,) array}) -> float`, called once per step with N > 0 responses."""
    return _register(RESPONSE_METRICS, name)


class Tokens:
    """The N valid tokens of one micro-batch, each quantity a (N,) float64 tensor gathered on first use."""

    def __init__(self, out: ObjectiveOutput, index: torch.Tensor):
        self._out, self._index = out, index  # index: positions of the valid tokens in the flattened (B, T)

    def _take(self, t: torch.Tensor) -> torch.Tensor:
        return t.reshape(-1).index_select(0, self._index).double()

    @cached_property
    def loss(self) -> torch.Tensor:
        """The per-token loss (loss_mat)."""
        return self._take(self._out.loss_mat)

    @cached_property
    def log_ratio(self) -> torch.Tensor:
        """log r = log π − log π_old, as the objective clamped it."""
        return self._take(self._out.log_ratio)

    @cached_property
    def advantages(self) -> torch.Tensor:
        return self._take(self._out.advantages)

    @cached_property
    def kept(self) -> torch.Tensor:
        """κ: the share of each token's gradient the objective's clip kept (kept.py)."""
        return self._take(kept_share(self._out))


# ---- token metrics ----

@token_metric("loss/token_mean")
def loss_token_mean(t: Tokens) -> torch.Tensor:
    return t.loss


@token_metric("kl/k1")
def kl_k1(t: Tokens) -> torch.Tensor:
    return -t.log_ratio


@token_metric("kl/k3")
def kl_k3(t: Tokens) -> torch.Tensor:
    return torch.expm1(t.log_ratio) - t.log_ratio


@token_metric("clip/kept_share")
def clip_kept_share(t: Tokens) -> torch.Tensor:
    return t.kept


# ---- response metrics ----

def _groups(r: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(correct responses, responses) per prompt group."""
    _, inverse = np.unique(r["group_id"].astype(np.int64), return_inverse=True)
    n_correct = np.bincount(inverse, weights=r["correct"].astype(np.int64))
    return n_correct, np.bincount(inverse)


@response_metric("length/mean")
def length_mean(r: dict[str, np.ndarray]) -> float:
    return float(r["length"].astype(np.float64).mean())


@response_metric("length/p50")
def length_p50(r: dict[str, np.ndarray]) -> float:
    return float(np.percentile(r["length"].astype(np.float64), 50))


@response_metric("length/p90")
def length_p90(r: dict[str, np.ndarray]) -> float:
    return float(np.percentile(r["length"].astype(np.float64), 90))


@response_metric("length/max")
def length_max(r: dict[str, np.ndarray]) -> float:
    return float(r["length"].astype(np.float64).max())


@response_metric("length/truncated_frac")
def truncated_frac(r: dict[str, np.ndarray]) -> float:
    return float(r["truncated"].astype(bool).mean())


@response_metric("reward/mean")
def reward_mean(r: dict[str, np.ndarray]) -> float:
    return float(r["reward"].mean())


@response_metric("reward/std")
def reward_std(r: dict[str, np.ndarray]) -> float:
    return float(r["reward"].std())


@response_metric("groups/count")
def group_count(r: dict[str, np.ndarray]) -> float:
    return float(len(np.unique(r["group_id"].astype(np.int64))))


@response_metric("groups/all_correct_frac")
def all_correct_frac(r: dict[str, np.ndarray]) -> float:
    n_correct, n_total = _groups(r)
    return float(np.mean(n_correct == n_total))


@response_metric("groups/all_wrong_frac")
def all_wrong_frac(r: dict[str, np.ndarray]) -> float:
    n_correct, _ = _groups(r)
    return float(np.mean(n_correct == 0))
