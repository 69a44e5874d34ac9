"""Merged TelemetryState -> StepRecord parts: scalars, distributions, outlier rows, sample rows.

Scalars come from the step-metric registries (`metrics.py`) and from the fixed statistics the accumulator keeps
(counts, float64 sums, extrema, histograms); every name is defined in `dhpo_suite.runs.metrics.METRICS`.
"""

from __future__ import annotations

from typing import Callable, Protocol, Sequence

import numpy as np

from dhpo_suite.runs.records import Histogram

from .bins import hist_quantile
from .metrics import RESPONSE_METRICS, TOKEN_METRICS

__all__ = ["build_scalars", "build_distributions", "build_outliers", "build_samples", "Decode", "MergedState"]

Decode = Callable[[Sequence[int]], list[str]]
"""Token ids -> one display string per token (e.g. tokenizer.batch_decode([[i] for i in ids]))."""


class MergedState(Protocol):
    """What the builders read of a merged `state.TelemetryState`; declared here (not imported) so that `state`,
    which calls these builders, and this module do not import each other (tests/test_architecture.py)."""

    bounds: dict[str, list]
    counts: dict[str, int]
    sums: dict[str, float]
    mins: dict[str, float]
    maxs: dict[str, float]
    hists: dict[str, np.ndarray]
    responses: dict[str, np.ndarray]
    outliers: dict[str, list[dict]]
    samples: dict[int, dict]
    outlier_samples: dict[str, dict]

    def edges(self, name: str) -> tuple[np.ndarray, np.ndarray | None]: ...

_NAN = float("nan")


def _div(a: float, b: float) -> float:
    return float(a) / b if b else _NAN


def build_scalars(st: "MergedState") -> dict[str, float]:
    """Every scalar of the metric namespace that the state can define (see dhpo_suite.runs.metrics)."""
    c, s = st.counts, st.sums
    n = c.get("tokens", 0)
    out: dict[str, float] = {"tokens/count": float(n), "tokens/nonfinite": float(c.get("nonfinite", 0))}
    if n:
        out.update({name: _div(s.get(name, 0.0), n) for name in TOKEN_METRICS})
        out.update(_advantage(st, n))
        for b, (low, high) in st.bounds.items():
            out[f"ratio/{b}/mean"] = _div(s.get(f"ratio/{b}", 0.0), n)
            if low is None and high is None:
                continue  # diagnostic branch without a trust region: no clip metrics
            for k in ("outside_low", "outside_high", "binding_low", "binding_high"):
                out[f"clip/{b}/{k}"] = _div(c.get(f"clip/{b}/{k}", 0), n)
            out[f"clip/{b}/binding"] = out[f"clip/{b}/binding_low"] + out[f"clip/{b}/binding_high"]
            binding = c.get(f"clip/{b}/binding_low", 0) + c.get(f"clip/{b}/binding_high", 0)
            if binding:  # absent when no token binds (nothing to say what it kept)
                out[f"clip/{b}/binding_kept"] = s.get(f"kept/{b}", 0.0) / binding
    if c.get("entropy_tokens", 0):
        out.update(_mean_and_percentiles(st, "entropy", (10, 50, 90, 99), log=True))
        out["entropy/frac_below_0.01"] = c.get("entropy_below_0.01", 0) / c["entropy_tokens"]
    if c.get("w_tokens", 0):
        out.update(_mean_and_percentiles(st, "w", (10, 25, 50, 75, 90)))
    if st.responses:
        out.update(_rollout(st))
    return out


def _advantage(st: "MergedState", n: int) -> dict[str, float]:
    c, s = st.counts, st.sums
    mean = s.get("adv", 0.0) / n
    var = max(s.get("adv_sq", 0.0) / n - mean * mean, 0.0)
    return {
        "adv/mean": mean,
        "adv/std": float(np.sqrt(var)),
        "adv/min": st.mins.get("adv", _NAN),
        "adv/max": st.maxs.get("adv", _NAN),
        "adv/pos_frac": _div(c.get("adv_pos", 0), n),
        "adv/neg_frac": _div(c.get("adv_neg", 0), n),
        "adv/zero_frac": _div(n - c.get("adv_pos", 0) - c.get("adv_neg", 0), n),
    }


def _mean_and_percentiles(st: "MergedState", name: str, qs: tuple[int, ...], log: bool = False) -> dict[str, float]:
    """{name}/mean over the `{name}_tokens` counted, and {name}/p{q} from the histogram `name`."""
    edges, _ = st.edges(name)
    out = {f"{name}/mean": st.sums.get(name, 0.0) / st.counts[f"{name}_tokens"]}
    out.update({f"{name}/p{q}": hist_quantile(edges, st.hists[name], q / 100, log=log) for q in qs})
    return out


def _rollout(st: "MergedState") -> dict[str, float]:
    out = {"responses/count": float(len(st.responses["length"]))}
    if len(st.responses["length"]):
        out.update({name: fn(st.responses) for name, fn in RESPONSE_METRICS.items()})
    return out


def build_distributions(st: "MergedState") -> dict[str, Histogram]:
    out = {}
    for name, counts in sorted(st.hists.items()):
        x, y = st.edges(name)
        shape = (len(x) - 1,) if y is None else (len(x) - 1, len(y) - 1)
        out[name] = Histogram(x, np.asarray(counts).reshape(shape), y)
    if st.responses and len(st.responses["length"]):
        x, _ = st.edges("length")
        idx = np.clip(np.searchsorted(x[1:-1], st.responses["length"], side="right"), 0, len(x) - 2)
        out["length"] = Histogram(x, np.bincount(idx, minlength=len(x) - 1))
    return out


def _texts(ids: Sequence[int] | None, texts: Sequence[str] | None, decode: "Decode | None") -> list[str] | None:
    if texts is not None:
        return list(texts)
    if ids is not None and decode is not None:
        return list(decode([int(i) for i in ids]))
    return None


def build_outliers(st: "MergedState", decode: "Decode | None") -> list[dict]:
    rows = []
    for branch in sorted(st.outliers):
        for c in st.outliers[branch]:
            tok = _texts(None if c.get("token_id") is None else [c["token_id"]],
                         None if c.get("token_text") is None else [c["token_text"]], decode)
            left = _texts(c.get("ctx_left_ids"), c.get("ctx_left_text"), decode)
            right = _texts(c.get("ctx_right_ids"), c.get("ctx_right_text"), decode)
            rows.append(
                {
                    "branch": branch,
                    "side": c["side"],
                    "distance": c["distance"],
                    "log_ratio": c["log_ratio"],
                    "binding": bool(c["binding"]),
                    "response_id": c["response_id"],
                    "position": c["position"],
                    "epoch": c["epoch"],
                    "token_id": c.get("token_id"),
                    "token_text": None if tok is None else tok[0],
                    "context_left": None if left is None else "".join(left),
                    "context_right": None if right is None else "".join(right),
                    "entropy": c.get("entropy"),
                    "w": c.get("w"),
                    "advantage": c["advantage"],
                }
            )
    return rows


_SAMPLE_ARRAYS = ("log_prob", "old_log_prob", "entropy", "w", "token_ratio", "seq_ratio", "mixed_ratio",
                  "clip_token", "clip_sequence", "clip_mixed")


def build_samples(st: "MergedState", decode: "Decode | None") -> list[dict]:
    return _sample_rows(st, sorted(st.samples.values(), key=lambda c: c["key"]), decode)


def build_outlier_responses(st: "MergedState", decode: "Decode | None") -> list[dict]:
    """The responses outlier tokens come from, by (response id, epoch); those already among the samples (same
    response and pass) are not repeated."""
    drawn = {(int(c["response_id"]), int(c["epoch"])) for c in st.samples.values()}
    cands = [c for c in st.outlier_samples.values() if (int(c["response_id"]), int(c["epoch"])) not in drawn]
    return _sample_rows(st, sorted(cands, key=lambda c: (c["response_id"], c["epoch"])), decode)


def _sample_rows(st: "MergedState", cands: list[dict], decode: "Decode | None") -> list[dict]:
    reward = {}
    if st.responses:
        reward = dict(zip(st.responses["response_id"].tolist(), st.responses["reward"].tolist()))
    rows = []
    for c in cands:
        row = {
            "response_id": c["response_id"],
            "epoch": c["epoch"],
            "reward": reward.get(c["response_id"]),
            "advantage": c["advantage"],
            "length": c["length"],
            "token_id": c.get("token_id"),
            "token_text": _texts(c.get("token_id"), c.get("token_text"), decode),
        }
        row.update({k: c.get(k) for k in _SAMPLE_ARRAYS})
        rows.append(row)
    return rows

