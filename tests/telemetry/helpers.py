"""Builders shared by the runs/telemetry tests: hand-made ObjectiveOutputs and records."""

from __future__ import annotations

import torch

from dhpo_suite.train.objectives.output import Branch, ObjectiveOutput


def branch(ratio, low, high, adv, mask, binding=True):
    """A Branch with PPO semantics: the clip binds beyond the bound on the side the min picks (A<0 low, A>0 high)."""
    ratio = torch.as_tensor(ratio, dtype=torch.float32)
    if low is None:
        return Branch(ratio)
    if not binding:
        return Branch(ratio, low, high)
    return Branch(ratio, low, high, (ratio < low) & (adv < 0), (ratio > high) & (adv > 0))


def make_output(log_ratio, adv, mask, entropy=None, w=None, eps=(0.2, 0.28), seq_eps=(3e-4, 4e-4), mixed=False):
    """ObjectiveOutput for (B, T) inputs: token branch clipped at eps, sequence branch at seq_eps, optional mixed."""
    log_ratio = torch.as_tensor(log_ratio, dtype=torch.float32)
    mask = torch.as_tensor(mask, dtype=torch.bool)
    adv = torch.as_tensor(adv, dtype=torch.float32).expand_as(log_ratio).clone()
    r = log_ratio.exp()
    seq = ((log_ratio * mask).sum(-1) / mask.sum(-1).clamp(min=1)).exp()[:, None].expand_as(r).clone()
    branches = {
        "token": branch(r, 1 - eps[0], 1 + eps[1], adv, mask),
        "sequence": branch(seq, 1 - seq_eps[0], 1 + seq_eps[1], adv, mask),
    }
    if mixed:
        ww = w if w is not None else torch.full_like(r, 0.5)
        branches["mixed"] = branch(ww * r + (1 - ww) * seq, 1 - eps[0], 1 + eps[1], adv, mask)
    return ObjectiveOutput(
        loss=torch.tensor(0.0),
        loss_mat=torch.where(mask, -adv * r, 0.0),
        response_mask=mask,
        advantages=adv,
        log_ratio=log_ratio,
        branches=branches,
        mix_weight=w,
        entropy=entropy,
        nonfinite=torch.tensor(0),
    )


def random_output(B=8, T=32, seed=0, mixed=True):
    g = torch.Generator().manual_seed(seed)
    lr = torch.randn(B, T, generator=g) * 0.3
    mask = torch.ones(B, T, dtype=torch.bool)
    lengths = torch.randint(T // 4, T + 1, (B,), generator=g)
    mask &= torch.arange(T)[None] < lengths[:, None]
    adv = torch.randn(B, 1, generator=g)
    adv[0] = 0.0
    ent = torch.rand(B, T, generator=g) ** 4 * 3
    w = torch.rand(B, T, generator=g) if mixed else None
    return make_output(lr, adv, mask, entropy=ent, w=w, mixed=mixed), lengths
