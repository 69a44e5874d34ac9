"""What an objective returns: the loss plus every per-token quantity telemetry needs.

All tensors are (B, T) unless noted, detached except `loss`. Boolean flags are False on masked tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import torch

__all__ = ["Branch", "ObjectiveOutput"]


class Branch:
    """One importance-ratio branch ("token", "sequence" or "mixed") and its trust region.

    `low`/`high` are the trust-region bounds in ratio space (1-ε_low, 1+ε_high); None when the objective
    puts no trust region on this branch (the ratio is then reported for diagnosis only, flags all False).
    `outside_*`: the value lies outside the region. `binding_*`: the clip actually removes gradient
    (the clipped side of the min is the active one). The two differ: with A>0 a ratio below 1-ε is outside
    but not binding.

    The four flags are given as tensors, or as `flags=fn` returning them, computed on first access: the
    loss itself never needs them, so a caller without telemetry does not pay the (B, T) comparisons.
    """

    __slots__ = ("ratio", "low", "high", "_flags", "_make")

    def __init__(self, ratio: torch.Tensor, low: float | None, high: float | None,
                 outside_low: torch.Tensor | None = None, outside_high: torch.Tensor | None = None,
                 binding_low: torch.Tensor | None = None, binding_high: torch.Tensor | None = None, *,
                 flags: Callable[[], tuple[torch.Tensor, ...]] | None = None) -> None:
        given = (outside_low, outside_high, binding_low, binding_high)
        if not (all(f is None for f in given) if flags is not None else all(f is not None for f in given)):
            raise TypeError("Branch: pass the four flag tensors or flags=fn, not both or some")
        self.ratio, self.low, self.high = ratio, low, high
        self._flags, self._make = (None, flags) if flags is not None else (given, None)

    def _flag(self, i: int) -> torch.Tensor:
        if self._flags is None:
            self._flags, self._make = tuple(self._make()), None
        return self._flags[i]

    outside_low = property(lambda self: self._flag(0))
    outside_high = property(lambda self: self._flag(1))
    binding_low = property(lambda self: self._flag(2))
    binding_high = property(lambda self: self._flag(3))

    def __repr__(self) -> str:
        return f"Branch(ratio={tuple(self.ratio.shape)}, low={self.low}, high={self.high})"


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
