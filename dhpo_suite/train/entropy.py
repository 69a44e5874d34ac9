"""The token entropy of softmax(logits) without its memory: no gradient, the vocabulary a slice at a time.

    H = logsumexp(z) - Σ_v softmax(z)_v z_v = log s - t / s,   s = Σ_v e^(z_v - m), t = Σ_v e^(z_v - m) (z_v - m)

with m = max_v z_v. verl's `entropy_from_logits` builds softmax(z) and softmax(z)·z over the whole vocabulary
and, in an actor update, keeps both for a backward pass (its entropy bonus, `policy_loss -= entropy_coeff *
entropy_loss`, stays in the graph even at coefficient 0). The objectives use the entropy detached (DHPO's
sg[H], eq. 10; telemetry), so this computes it under no_grad, in fp32, one slice of `vocab_chunks` at a time:
the extra memory is two (tokens × vocab / vocab_chunks) buffers, 3 % of the logits with the default 64.
"""

from __future__ import annotations

import torch

__all__ = ["VOCAB_CHUNKS", "entropy_without_grad"]

VOCAB_CHUNKS = 64


@torch.no_grad()
def entropy_without_grad(logits: torch.Tensor, chunk_size: int | None = None,
                         vocab_chunks: int = VOCAB_CHUNKS) -> torch.Tensor:
    """(..., V) logits -> (...,) entropy, detached, in the logits' dtype (computed in fp32 or wider).

    `chunk_size` is verl's token-chunking argument (`entropy_from_logits_with_chunking`), accepted and unused:
    chunking over the vocabulary already bounds the memory."""
    z = logits.detach()
    dtype = torch.promote_types(z.dtype, torch.float32)
    m = z.max(dim=-1, keepdim=True).values.to(dtype)
    s = torch.zeros(z.shape[:-1], dtype=dtype, device=z.device)
    t = torch.zeros_like(s)
    size = -(-z.shape[-1] // vocab_chunks)
    for start in range(0, z.shape[-1], size):
        d = z[..., start:start + size].to(dtype) - m  # <= 0: no large offset to cancel (peaked logits)
        e = d.exp()
        s += e.sum(-1)
        t += e.mul_(d).sum(-1)
    return (s.log() - t / s).to(logits.dtype)
