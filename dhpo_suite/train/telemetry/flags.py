"""Clip flags: where a branch's ratio lies outside its trust region, and where its clip binds.

The one place they are derived. An objective's `Branch` carries the ratio, its region and where its clip removes
gradient on each side; every reader of flags (the accumulator, outlier and sample selection, verl's
`actor/pg_clipfrac`) asks `clip_flags`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from dhpo_suite.runs.records import CLIP_FLAG_BITS
from dhpo_suite.train.objectives.output import Branch

__all__ = ["ClipFlags", "clip_flags", "clip_codes"]


@dataclass(frozen=True)
class ClipFlags:
    """Four (B, T) bool tensors, False on tokens outside the response mask (docs/run-format.md, `clip/{b}/*`)."""

    outside_low: torch.Tensor  # the ratio lies below the region's lower bound 1−ε_low
    outside_high: torch.Tensor  # the ratio lies above the region's upper bound 1+ε_high
    binding_low: torch.Tensor  # the lower clip removes this token's gradient (A<0 side)
    binding_high: torch.Tensor  # the upper clip removes this token's gradient (A>0 side)


def clip_flags(branch: Branch, mask: torch.Tensor) -> ClipFlags:
    """The flags of one branch over the valid tokens `mask` (bool, (B, T)).

    outside: the ratio compared with its bounds (none without a trust region). binding: the objective's
    per-side clip masks (none for a ratio it does not clip).
    """
    none = torch.zeros_like(mask)

    def side(flag: torch.Tensor | None) -> torch.Tensor:
        return none if flag is None else mask & flag

    ratio, low, high = branch.ratio, branch.low, branch.high
    if low is None and high is None:
        return ClipFlags(none, none, none, none)
    outside_low = none if low is None else mask & (ratio < low)
    outside_high = none if high is None else mask & (ratio > high)
    return ClipFlags(outside_low, outside_high, side(branch.clip_low), side(branch.clip_high))


def clip_codes(flags: ClipFlags) -> torch.Tensor:
    """(B, T) int8 bit set of CLIP_FLAG_BITS (the per-token clip lists of the samples table)."""
    code = torch.zeros(flags.outside_low.shape, dtype=torch.int8, device=flags.outside_low.device)
    for name, bit in CLIP_FLAG_BITS.items():
        code |= getattr(flags, name).to(torch.int8) * bit
    return code
