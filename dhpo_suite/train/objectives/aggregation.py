"""Loss aggregation: a (B, T) per-token loss → one scalar, with verl's global normalisation.

The semantics are verl 0.9.1's `agg_loss` so that gradients stay correct under gradient accumulation
and data parallelism: when a step's batch is split into micro-batches (and ranks), pass the *global*
valid-token count (`batch_num_tokens`) or the global number of non-empty responses
(`global_batch_size`) and the data-parallel size; summing the micro-batch losses (and averaging the
gradients over ranks, as DDP/FSDP do) then equals the loss of the whole batch.
"""

from __future__ import annotations

import torch

__all__ = ["AGG_MODES", "PAPER_AGG_MODE", "aggregate"]

AGG_MODES = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-sum-norm", "seq-mean-token-mean")
PAPER_AGG_MODE = "seq-mean-token-mean"
"""Every objective's default: the paper's eqs. 3 (GRPO), 6 (GSPO) and 7 (DHPO) all aggregate as
1/G Σ_i 1/|o_i| Σ_t, and Appendix D shares every setting but the clip ranges across methods."""


def aggregate(
    loss_mat: torch.Tensor,
    mask: torch.Tensor,
    mode: str,
    *,
    dp_size: int = 1,
    batch_num_tokens: float | torch.Tensor | None = None,
    global_batch_size: float | torch.Tensor | None = None,
    loss_scale_factor: float | None = None,
) -> torch.Tensor:
    """Aggregate a masked (B, T) loss matrix.

    token-mean               Σ_it ℓ / N_tokens                       (DAPO; by option)
    token-sum                Σ_it ℓ
    seq-mean-token-mean      mean_i (Σ_t ℓ_it / |o_i|)               (paper eqs. 3, 6, 7: the default)
    seq-mean-token-sum       mean_i Σ_t ℓ_it
    seq-mean-token-sum-norm  mean_i Σ_t ℓ_it / loss_scale_factor     (Dr. GRPO; default factor T)
    Responses with no valid token do not count in any sequence mean.
    """
    if mode not in AGG_MODES:
        raise ValueError(f"loss_agg_mode={mode!r} is not one of {', '.join(AGG_MODES)}")
    if dp_size > 1 and batch_num_tokens is None and mode == "token-mean":
        raise ValueError("batch_num_tokens (the global valid-token count) is required when dp_size > 1")
    if dp_size > 1 and global_batch_size is None and mode.startswith("seq-mean"):
        raise ValueError("global_batch_size (the global number of responses) is required when dp_size > 1")
    m = mask.to(loss_mat.dtype)
    if mode == "token-mean":
        # clamp: a micro-batch with no valid token gives loss 0, not verl's 0/0 = NaN.
        n = m.sum().clamp(min=1) if batch_num_tokens is None else batch_num_tokens
        return (loss_mat * m).sum() / n * dp_size
    if mode == "token-sum":
        return (loss_mat * m).sum() * dp_size
    counts = m.sum(-1)
    seq_sum = (loss_mat * m).sum(-1)
    # 1/|o_i| exactly as eqs. 3/6/7 write it (verl adds 1e-8 to |o_i|: ~1e-8 relative apart); the clamp
    # only guards empty rows, which `nonempty` then drops.
    seq_loss = seq_sum / counts.clamp(min=1) if mode == "seq-mean-token-mean" else seq_sum
    nonempty = (counts > 0).to(loss_mat.dtype)
    n_seq = nonempty.sum().clamp(min=1) if global_batch_size is None else global_batch_size
    loss = (seq_loss * nonempty).sum() / n_seq * dp_size
    if mode == "seq-mean-token-sum-norm":
        loss = loss / (loss_scale_factor if loss_scale_factor is not None else mask.shape[-1])
    return loss
