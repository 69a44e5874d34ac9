"""What an objective returns: the loss plus the per-token tensors telemetry reduces. Plain tensors, no logic.

All tensors are (B, T) unless noted and detached except `loss`. Telemetry derives the outside/binding clip
flags from each branch (`dhpo_suite.train.telemetry.clip_flags`); objectives only say where they clip.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch

__all__ = ["Branch", "ObjectiveOutput"]


@dataclass(frozen=True)
class Branch:
    """One importance ratio ("token", "sequence" or "mixed"), its trust region and where its clip acts.

    `low`/`high`: the trust region in ratio space (1-ε_low, 1+ε_high); None when the objective puts no trust
    region on this ratio (it is reported for diagnosis only). `clip_low`/`clip_high`: bool, the tokens whose
    gradient this ratio's lower / upper clip removes (CISPO: truncates); None when the objective does not clip
    this ratio. A token can lie outside the region without its clip binding (A>0 below 1-ε_low).
    """

    ratio: torch.Tensor
    low: float | None = None
    high: float | None = None
    clip_low: torch.Tensor | None = None
    clip_high: torch.Tensor | None = None


@dataclass(frozen=True)
class ObjectiveOutput:
    """Result of one objective call on a micro-batch."""

    loss: torch.Tensor  # scalar, differentiable, aggregated with the requested agg mode
    loss_mat: torch.Tensor  # (B, T) per-token loss before aggregation, detached
    response_mask: torch.Tensor  # (B, T) bool: tokens that count (non-finite inputs removed)
    advantages: torch.Tensor  # (B, T) advantages broadcast per token
    log_ratio: torch.Tensor  # (B, T) clamped log(π/π_old) per token (approx-KL source)
    branches: Mapping[str, Branch]  # always "token" and "sequence"; DHPO adds "mixed"
    mix_weight: torch.Tensor | None  # (B, T) w (DHPO only)
    entropy: torch.Tensor | None  # (B, T) token entropy when the caller passed it
    nonfinite: torch.Tensor  # scalar int64: valid tokens with NaN/inf inputs, excluded from the loss
