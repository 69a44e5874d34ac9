"""Group-relative advantages (paper eq. 1, GRPO): each response is scored against its group."""

from __future__ import annotations

import torch

__all__ = ["group_advantages"]


def group_advantages(
    rewards: torch.Tensor, group_size: int, *, eps: float = 1e-6, std_normalize: bool = True
) -> torch.Tensor:
    """Â_i = (R_i − mean(R_group)) / (std(R_group) + eps); (N,) → (N,).

    `rewards` holds N = n_prompts · group_size rewards, the G responses of a prompt contiguous.
    std is the unbiased sample std (torch's default, as in verl's GRPO estimator). A group whose
    rewards are all equal gets advantage 0 for every response (its std is 0; eps avoids 0/0).
    std_normalize=False gives Dr. GRPO's mean-only centring.
    """
    if rewards.ndim != 1:
        raise ValueError(f"rewards must be 1-D (N,), got shape {tuple(rewards.shape)}")
    if group_size < 1 or rewards.numel() % group_size:
        raise ValueError(f"{rewards.numel()} rewards do not split into groups of group_size={group_size}")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards contain NaN or inf")
    groups = rewards.reshape(-1, group_size).to(torch.promote_types(rewards.dtype, torch.float32))
    centred = groups - groups.mean(-1, keepdim=True)
    if std_normalize and group_size > 1:
        centred = centred / (groups.std(-1, keepdim=True) + eps)
    return centred.reshape(-1)
