"""Small shared pieces every objective is built from: ratios, the stop-gradient sequence ratio,
the entropy mixing weight and the PPO clipped surrogate.

Shapes: B responses × T response tokens. `mask` is a bool (B, T) tensor of the tokens that count.
"""

from __future__ import annotations

import torch

__all__ = ["LOG_RATIO_CLAMP", "SEQ_LOG_RATIO_MAX", "token_log_ratio", "sequence_log_ratio", "sg_sequence_ratio",
           "entropy_weight", "clipped_surrogate"]

LOG_RATIO_CLAMP = 20.0  # verl clamps log(π/π_old) to ±20 before exp (vanilla, cispo, sapo)
SEQ_LOG_RATIO_MAX = 10.0  # verl clamps the GSPO log sequence ratio from above at 10


def token_log_ratio(log_prob: torch.Tensor, old_log_prob: torch.Tensor) -> torch.Tensor:
    """log r_it = log π − log π_old (the token ratio of paper eq. 2), clamped to ±20 like verl (exp() stays finite)."""
    return torch.clamp(log_prob - old_log_prob, -LOG_RATIO_CLAMP, LOG_RATIO_CLAMP)


def sequence_log_ratio(log_ratio: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log s_i = mean_t log r_it over the response's valid tokens (GSPO's sequence ratio); (B,). 0 for empty rows."""
    lengths = mask.sum(-1).clamp(min=1)
    return (log_ratio * mask).sum(-1) / lengths


def sg_sequence_ratio(log_prob: torch.Tensor, seq_log_ratio: torch.Tensor) -> torch.Tensor:
    """s_it = sg[s_i] · π_it / sg[π_it] (GSPO-token, as DHPO carries the sequence ratio per token); (B, T).

    Its value is s_i on every token; its gradient is s_i · ∇log π_it, so each token keeps its own
    credit while the ratio's size is the sequence's. Written s_i + s_i·(log π_it − sg[log π_it]): the bracket is
    exactly 0, so the value is s_i and the gradient s_i·∇log π_it, in two passes over (B, T) where
    exp(log π − sg[log π] + log s_i) takes four and a clamp's backward. verl clamps log s_i at 10 (a response
    whose clamp binds gets no gradient): done per response, on (B,).
    """
    log_s = seq_log_ratio.detach()
    s = torch.exp(torch.clamp(log_s, max=SEQ_LOG_RATIO_MAX))
    slope = torch.where(log_s <= SEQ_LOG_RATIO_MAX, s, torch.zeros_like(s))
    return torch.addcmul(s.unsqueeze(-1), slope.unsqueeze(-1), log_prob - log_prob.detach())


def entropy_weight(entropy: torch.Tensor, mask: torch.Tensor, scope: str) -> torch.Tensor:
    """w_it = g(sg[H_it]): min-max normalised token entropy in [0, 1] (paper eq. 10); (B, T).

    scope="sequence" (default) normalises within each response, so w never depends on which other
    responses share the micro-batch; scope="batch" normalises over all valid tokens of the call (the
    value then changes when a batch is split into micro-batches). Where max == min (a one-token
    response, constant entropy) w falls back to 0.5, the averaged mix.
    """
    h = entropy.detach()
    big = torch.finfo(h.dtype).max
    dims = (-1,) if scope == "sequence" else (0, 1)
    lo = h.masked_fill(~mask, big).amin(dim=dims, keepdim=True)
    hi = h.masked_fill(~mask, -big).amax(dim=dims, keepdim=True)
    span = hi - lo
    flat = span <= 1e-6 * hi.abs().clamp(min=1.0)
    # Per-row scale and offset, so the (B, T) work is one fused-friendly (h - lo) * scale + offset.
    scale = torch.where(flat, torch.zeros_like(span), 1.0 / torch.where(flat, torch.ones_like(span), span))
    w = torch.addcmul(flat.to(h.dtype) * 0.5, h - lo, scale).clamp_(0.0, 1.0)
    return w * mask


def clipped_surrogate(
    ratio: torch.Tensor, clipped: torch.Tensor, adv: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """PPO's pessimistic surrogate as a loss: max(−A·ratio, −A·clipped) (the min of paper eqs. 3 and 7).

    Returns (loss_mat, clip_low, clip_high): where the clipped term is strictly the larger loss, clipping
    removes the gradient; with A < 0 that is the lower bound's doing (clipped > ratio), with A > 0 the upper's.
    """
    neg_adv = -adv
    unclipped_loss, clipped_loss = neg_adv * ratio, neg_adv * clipped
    active = clipped_loss > unclipped_loss
    # max() as where(): the same values, and a backward of two selects instead of max's tie-splitting (a tie is
    # m = m̃, where both terms carry the same gradient).
    return torch.where(active, clipped_loss, unclipped_loss), active & (adv < 0), active & (adv > 0)
