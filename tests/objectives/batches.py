"""Random micro-batches shared by the objective tests."""

import torch


def make_batch(B=6, T=9, seed=0, spread=0.3, dtype=torch.float64, empty_row=True):
    """Random fp64 micro-batch: log-probs, old log-probs near them, ragged mask, per-response advantages."""
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g, dtype=dtype) * 3 - 0.05
    lp = (old + torch.randn(B, T, generator=g, dtype=dtype) * spread).requires_grad_(True)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    if empty_row:
        lengths[-1] = 0
    mask = torch.arange(T)[None, :] < lengths[:, None]
    adv = torch.randn(B, generator=g, dtype=dtype)
    entropy = torch.rand(B, T, generator=g, dtype=dtype) * 2
    return lp, old, adv, mask, entropy
