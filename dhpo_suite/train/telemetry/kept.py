"""Kept share: how much of each token's policy gradient survived the objective's clip (issue 26, item 5).

"Binding" alone means two things: for GRPO a binding token loses its whole gradient, for DHPO under branch
clipping the part of the mix whose ratio stayed in its region keeps flowing. The kept share κ says how much:

    κ_it = g_it(clipped objective) / g_it(same objective without clipping),   g = the coefficient of ∇log π_it

derived from the `Branch` records an objective returns (the formulas in `train/objectives` are not touched):

- DHPO, branch clipping (eq. 11). Where the mix's clip took the clipped side (mixed.clip_low | clip_high),
  ∇m̃ = w·1[r ∈ R_tok]·r·∇log π + (1−w)·1[s ∈ R_seq]·s·∇log π (a clamped ratio has no gradient inside its
  clamp, and s_it carries s_i·∇log π_it), while unclipped ∇m = (w·r + (1−w)·s)·∇log π, so
      κ = (w·1[r ∈ R_tok]·r + (1−w)·1[s ∈ R_seq]·s) / m        (κ = 1 where the mix's clip did not act).
  R = [low, high] of the branch, closed (torch.clamp passes the gradient on the bounds).
- DHPO, unified clipping: m̃ = clip(m) has no gradient where its clip acts: κ = 0 there, else 1.
- Every other objective: κ = 0 on a token any branch's clip flags as binding, else 1 (GRPO, GSPO, GMPO remove
  the gradient; CISPO's flag marks a truncated weight, counted as 0 here although CISPO keeps clip(r)/r of it).
"""

from __future__ import annotations

import torch

from dhpo_suite.train.objectives.output import Branch, ObjectiveOutput

__all__ = ["kept_share"]


def _binding(br: Branch) -> torch.Tensor | None:
    """Where this branch's clip removes gradient (either side); None for a branch the objective does not clip."""
    if br.clip_low is None or br.clip_high is None:
        return br.clip_high if br.clip_low is None else br.clip_low
    return br.clip_low | br.clip_high


def _inside(br: Branch) -> torch.Tensor:
    """1 where the ratio lies in its closed trust region (its clamp passes the gradient), as the ratio's dtype."""
    ok = torch.ones_like(br.ratio, dtype=torch.bool)
    if br.low is not None:
        ok &= br.ratio >= br.low
    if br.high is not None:
        ok &= br.ratio <= br.high
    return ok.to(br.ratio.dtype)


def kept_share(out: ObjectiveOutput) -> torch.Tensor:
    """κ (B, T) in [0, 1], float64: the share of each token's gradient its objective's clip kept (module docstring).

    Values on masked-out tokens are meaningless (callers reduce over the response mask).
    """
    mixed = out.branches.get("mixed")
    shape_like = out.log_ratio.to(torch.float64)
    if mixed is not None and out.mix_weight is not None:
        acted = _binding(mixed)
        if acted is None:
            return torch.ones_like(shape_like)
        tok, seq = out.branches["token"], out.branches["sequence"]
        if _binding(tok) is None:  # unified clipping: the clipped mix is a constant
            return (~acted).to(torch.float64)
        w, r, s = out.mix_weight.double(), tok.ratio.double(), seq.ratio.double()
        partial = (w * _inside(tok).double() * r + (1 - w) * _inside(seq).double() * s) / mixed.ratio.double()
        return torch.where(acted, partial.clamp(0.0, 1.0), torch.ones_like(partial))
    removed = torch.zeros_like(shape_like, dtype=torch.bool)
    for br in out.branches.values():
        flag = _binding(br)
        if flag is not None:
            removed |= flag
    return (~removed).to(torch.float64)
