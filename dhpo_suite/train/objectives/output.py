"""What an objective returns: the loss plus every per-token quantity telemetry needs.

All tensors are (B, T) unless noted, detached except `loss`. Boolean flags are False on masked tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import torch

__all__ = ["Branch", "ObjectiveOutput"]


@dataclass(frozen=True)
class Branch:
    """One importance-ratio branch ("token", "sequence" or "mixed") and its trust region.

    `low`/`high` are the trust-region bounds in ratio space (1-ε_low, 1+ε_high); None when the objective
    puts no trust region on this branch (the ratio is then reported for diagnosis only, flags all False).
    `outside_*`: the value lies outside the region. `binding_*`: the clip actually removes gradient
    (the clipped side of the min is the active one). The two differ: with A>0 a ratio below 1-ε is outside
    but not binding.
    """

    ratio: torch.Tensor
    low: float | None
    high: float | None
    outside_low: torch.Tensor
    outside_high: torch.Tensor
    binding_low: torch.Tensor
    binding_high: torch.Tensor


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
