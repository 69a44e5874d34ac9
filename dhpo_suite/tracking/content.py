"""What a mirror shows of one step: scalars, 1-D histograms and sampled rollouts, taken from a StepRecord.

Pure functions of the run directory's own objects (no tracker imports), so TensorBoard and W&B mirror
exactly the same things under exactly the same names:

- scalars: every scalar of the step under its run-directory name (the metric namespace of
  docs/run-format.md plus the trainer's own `<part>/` columns); NaN means "not measured" and is left out;
- histograms: every 1-D histogram of the step under its stored name (`log_ratio/{b}/{pos,neg,zero}`,
  `entropy`, `w`, `length`), trimmed to the bins between the first and the last non-empty one; the 2-D
  histograms have no counterpart in either tracker and are not mirrored;
- samples: one row per sampled response (SAMPLE_COLUMNS), for a W&B table every N steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dhpo_suite.runs import Histogram, StepRecord

__all__ = ["SAMPLE_COLUMNS", "Bins", "histograms", "manifest_config", "sample_rows", "scalars"]

SAMPLE_COLUMNS = ("step", "response_id", "prompt", "response", "gold", "reward", "advantage", "length",
                  "mean_ratio", "seq_ratio")
"""Columns of the sampled-rollout table. `prompt` / `gold`: as the trainer recorded them (empty when it did
not); `mean_ratio`: the mean over the response's tokens of the ratio the objective used (the DHPO mix when
recorded, else the token ratio); `seq_ratio`: GSPO's sequence ratio."""


@dataclass(frozen=True)
class Bins:
    """A histogram's non-empty span: counts[i] lies in [edges[i], edges[i+1]); len(edges) == len(counts) + 1."""

    edges: np.ndarray
    counts: np.ndarray


def scalars(record: StepRecord) -> dict[str, float]:
    """Every measured scalar of the step, by its run-directory name."""
    return {k: float(v) for k, v in record.scalars.items() if v is not None and math.isfinite(float(v))}


def histograms(record: StepRecord) -> dict[str, Bins]:
    """Every non-empty 1-D histogram of the step, trimmed to its non-empty span."""
    return {name: b for name, h in sorted(record.distributions.items()) if (b := trim(h)) is not None}


def trim(h: Histogram) -> Bins | None:
    """The bins from the first to the last non-empty one; None for a 2-D or an empty histogram."""
    if h.y_edges is not None:
        return None
    nonzero = np.flatnonzero(h.counts)
    if nonzero.size == 0:
        return None
    first, last = int(nonzero[0]), int(nonzero[-1])
    return Bins(h.edges[first : last + 2], h.counts[first : last + 1])


def sample_rows(record: StepRecord) -> list[dict[str, Any]]:
    """One dict per sampled response (SAMPLE_COLUMNS), in response-id order."""
    rows = []
    for s in sorted(record.samples, key=lambda r: r["response_id"]):
        ratios = _values(s.get("mixed_ratio")) or _values(s.get("token_ratio"))
        seq = _values(s.get("seq_ratio"))
        rows.append({
            "step": int(record.step),
            "response_id": int(s["response_id"]),
            "prompt": _text(s.get("prompt")),
            "response": "".join(_values(s.get("token_text")) or []),
            "gold": _text(s.get("gold")),
            "reward": _num(s.get("reward")),
            "advantage": _num(s.get("advantage")),
            "length": int(_num(s.get("length")) or 0),
            "mean_ratio": float(np.mean(ratios)) if ratios else None,
            "seq_ratio": float(seq[0]) if seq else None,
        })
    return rows


def manifest_config(manifest: Any) -> dict[str, Any]:
    """The run manifest as a plain dict (the tracker's run config)."""
    return manifest.to_dict() if hasattr(manifest, "to_dict") else dict(manifest)


def _values(v: Any) -> list | None:
    if v is None:
        return None
    v = v.tolist() if hasattr(v, "tolist") else list(v)
    return v or None


def _text(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _num(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)
