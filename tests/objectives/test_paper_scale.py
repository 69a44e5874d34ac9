"""The objectives at the paper's sizes: G = 16 responses a prompt and responses up to its 16K-token budget
(Appendix D; a real batch mixes a few long and many short responses, and truncated ones fill the budget).
Against the fp64 reference of test_paper_reference.py, in fp64 and in fp32 (what trainers run): a 16K-token
mean log-ratio, entropy min-max over 16K tokens and the 1/|o_i| weights must hold there as on toy batches."""

from __future__ import annotations

from functools import cache

import pytest
import torch

from tests.objectives.test_paper_reference import F64, reference_loss

from dhpo_suite.train.objectives import get_objective

G, BUDGET = 16, 16384
LENGTHS = [BUDGET, BUDGET, 12000, 9000, 4096, 2048, 1500, 700, 300, 120, 64, 17, 5, 2, 1, 3000]


@cache
def paper_batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    mask = torch.arange(BUDGET)[None, :] < torch.tensor(LENGTHS)[:, None]
    old = -torch.rand(G, BUDGET, generator=g, dtype=F64) * 3 - 0.05
    # sequence log-ratios inside and outside every region; token noise like an off-policy step's
    shift = torch.linspace(-0.4, 0.4, G, dtype=F64)[:, None]
    lp = torch.where(mask, old + shift + torch.randn(G, BUDGET, generator=g, dtype=F64) * 0.3, 0.0)
    adv = torch.randn(G, generator=g, dtype=F64)
    adv = (adv - adv.mean()) / adv.std()  # eq. 1
    entropy = torch.rand(G, BUDGET, generator=g, dtype=F64) * 3
    return lp, old, adv, mask, entropy


@cache
def reference(name: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, gradient) of the fp64 reference on the paper-size batch; once per objective, for both dtypes."""
    lp, old, adv, _, ent = paper_batch()
    x = lp.clone().requires_grad_(True)
    loss = reference_loss(name, x, old, adv, LENGTHS, ent)
    return loss.detach(), torch.autograd.grad(loss, x)[0]


@pytest.mark.parametrize("name", ["grpo", "gspo", "cispo", "dhpo-a", "dhpo-e"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_objectives_at_the_papers_group_and_budget(name, dtype):
    lp, old, adv, mask, ent = paper_batch()
    x = lp.to(dtype, copy=True).requires_grad_(True)  # the cached batch stays a constant
    out = get_objective(name)(x, old.to(dtype), adv.to(dtype), mask, ent.to(dtype))
    (grad,) = torch.autograd.grad(out.loss, x)
    ref, ref_grad = reference(name)
    tol = dict(rtol=1e-10, atol=1e-13) if dtype == torch.float64 else dict(rtol=2e-4, atol=1e-7)
    torch.testing.assert_close(out.loss.to(F64), ref, **tol)
    torch.testing.assert_close(grad.to(F64), ref_grad, **tol)
    assert (grad[~mask] == 0).all()
    # the 1/|o_i| weights at this size: a 1-token response's token weighs 16384× a full response's token
    assert float(ref_grad[14, 0].abs()) > 1000 * float(ref_grad[0].abs().mean())
