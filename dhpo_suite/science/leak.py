"""The trust-region leak: the share of gradient an objective keeps on the tokens whose own ratio left its trust
region on the side where its clip acts (the tokens whose clip "binds"), per run and per label.

Why it is a measure of its own (docs/objectives.md, "The trust-region leak", has the derivation). In GRPO's eq. 3 a
binding token's clipped term is a constant: its gradient is removed whole, leak 0. Under DHPO's branch clipping
(eq. 11, m̃ = w·clip(r) + (1−w)·clip(s)) the token branch's clamp passes no gradient once r has left its region,
but the sequence branch's clamp still does while s stays inside its own; by eq. 17 the token keeps (1−w)·s·A·∇log π
of the unclipped m·A·∇log π, the share (1−w)·s/m. A 60-token geometric mean s hardly moves, so the sequence
branch keeps that share on nearly every binding token: the trust region leaks by (1−w)·s/m.

The telemetry already logs the parts, per step and branch b (docs/run-format.md): `clip/{b}/binding` (share of
the step's valid tokens whose clip of b binds), `clip/{b}/binding_kept` (mean κ over them, κ the kept share of
telemetry/kept.py) and `tokens/count`. A run's leak is the κ-mean over all its binding tokens:

    leak = Σ_steps binding_kept · binding · tokens  /  Σ_steps binding · tokens

(steps weighted by their binding tokens; without `tokens/count`, by their binding share). The branch read is the
token's own clip: `token` where the objective clips r (GRPO, CISPO, DHPO branch clipping), else `mixed` (DHPO
unified clipping, whose one clip acts on m), else `sequence` (GSPO, whose per-token ratio is s_it); the first of
these whose clip bound at all in the run. A run where no clip ever bound has no leak (NaN).

Pure pandas over the runs' scalars (science reads runs/ only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dhpo_suite.science.compare import Interval, interval

__all__ = ["LEAK_BRANCHES", "LabelLeak", "Leak", "label_leaks", "leak_branch", "run_leak"]

LEAK_BRANCHES = ("token", "mixed", "sequence")


@dataclass(frozen=True)
class Leak:
    """One run's leak: the kept share on its binding tokens, the branch read, and that branch's binding share."""

    value: float
    branch: str | None
    binding: float


def leak_branch(frame: pd.DataFrame) -> str | None:
    """The branch whose clip is the token's own (module docstring); None when no clip bound in the run."""
    for b in LEAK_BRANCHES:
        col = f"clip/{b}/binding"
        if col in frame and frame[col].fillna(0).sum() > 0:
            return b
    return None


def run_leak(frame: pd.DataFrame) -> Leak:
    """The leak of one run from its scalars frame (one row per step)."""
    b = leak_branch(frame)
    if b is None:
        return Leak(math.nan, None, 0.0)
    binding = frame[f"clip/{b}/binding"].fillna(0).to_numpy(dtype=float)
    kept_col = f"clip/{b}/binding_kept"
    kept = frame[kept_col].fillna(0).to_numpy(dtype=float) if kept_col in frame else np.full(len(frame), np.nan)
    tokens = frame["tokens/count"].fillna(0).to_numpy(dtype=float) if "tokens/count" in frame else np.ones(len(frame))
    weight = binding * tokens
    return Leak(float((kept * weight).sum() / weight.sum()), b, float(binding.mean()))


@dataclass(frozen=True)
class LabelLeak:
    """Per label: the leak across its runs (seeds), the branch(es) read, the binding share, and the shares of
    tokens whose sequence ratio lay above / below its region (mean over steps and runs; NaN without one)."""

    label: str
    leak: Interval
    branch: str
    binding: float
    sequence_above: float
    sequence_below: float


def label_leaks(scalars: pd.DataFrame) -> list[LabelLeak]:
    """The leak of every label of stacked scalars (columns label, seed, run, step and the metrics)."""
    out = []
    for label, g in scalars.groupby("label", sort=True):
        leaks = [run_leak(r.sort_values("step")) for _, r in g.groupby("run", sort=True)]
        branches = sorted({x.branch for x in leaks if x.branch is not None})
        above, below = (float(g[c].mean()) if c in g else math.nan
                        for c in ("clip/sequence/outside_high", "clip/sequence/outside_low"))
        out.append(LabelLeak(str(label), interval([x.value for x in leaks]), "/".join(branches) or "none",
                             float(np.mean([x.binding for x in leaks])) if leaks else math.nan, above, below))
    return out
