"""DHPO's defining identities: its limits are GRPO and GSPO, branch vs unified clip, eq. (17)."""

import pytest
import torch

from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import clip_flags
from tests.objectives.batches import make_batch


def flags(out, branch):
    return clip_flags(out.branches[branch], out.response_mask)


def loss_and_grad(obj, lp, old, adv, mask, entropy=None, **kw):
    lp = lp.detach().clone().requires_grad_(True)
    out = obj(lp, old, adv, mask, entropy, **kw)
    (grad,) = torch.autograd.grad(out.loss, lp)
    return out, grad


@pytest.mark.parametrize("clip", ["branch", "unified"])
@pytest.mark.parametrize("agg", ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum"])
def test_dhpo_with_w_one_is_grpo(clip, agg):
    lp, old, adv, mask, _ = make_batch(spread=0.4)
    dhpo = get_objective("dhpo-a", avg_weight=1.0, clip=clip, eps_low=0.2, eps_high=0.28, loss_agg_mode=agg)
    grpo = get_objective("grpo", eps_low=0.2, eps_high=0.28, loss_agg_mode=agg)
    a, ga = loss_and_grad(dhpo, lp, old, adv, mask)
    b, gb = loss_and_grad(grpo, lp, old, adv, mask)
    assert flags(a, "token").outside_high.any(), "the case must exercise the clip"
    torch.testing.assert_close(a.loss, b.loss, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ga, gb, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("clip", ["branch", "unified"])
def test_dhpo_with_w_zero_is_gspo(clip):
    lp, old, adv, mask, _ = make_batch(spread=0.05)
    eps = dict(eps_low=3e-4, eps_high=4e-4)
    seq_eps = dict(seq_eps_low=3e-4, seq_eps_high=4e-4)
    dhpo = get_objective("dhpo-a", avg_weight=0.0, clip=clip, **eps, **seq_eps, loss_agg_mode="seq-mean-token-mean")
    gspo = get_objective("gspo", **eps)
    a, ga = loss_and_grad(dhpo, lp, old, adv, mask)
    b, gb = loss_and_grad(gspo, lp, old, adv, mask)
    assert flags(b, "sequence").binding_high.any() or flags(b, "sequence").binding_low.any()
    torch.testing.assert_close(a.loss, b.loss, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(ga, gb, rtol=1e-12, atol=1e-12)


def test_branch_and_unified_agree_when_nothing_is_clipped():
    lp, old, adv, mask, ent = make_batch(spread=0.01)
    outs = [loss_and_grad(get_objective("dhpo-e", clip=c), lp, old, adv, mask, ent) for c in ("branch", "unified")]
    (a, ga), (b, gb) = outs
    for name in a.branches:
        assert not (flags(a, name).outside_low | flags(a, name).outside_high).any()
    torch.testing.assert_close(a.loss, b.loss, rtol=1e-12, atol=0)
    torch.testing.assert_close(ga, gb, rtol=1e-12, atol=0)


def test_branch_and_unified_differ_when_one_branch_is_an_outlier():
    # One response, A > 0: token 0's ratio is far above its region while the sequence ratio is
    # near 1. Branch clipping caps the token branch alone; unified clipping sees a mixed ratio that
    # the sequence branch pulls back inside the region, so nothing is clipped.
    old = torch.full((1, 4), -1.0, dtype=torch.float64)
    lp = old.clone()
    lp[0, 0] += 0.4  # r = e^0.4 ≈ 1.49 > 1.28
    lp[0, 1:] -= 0.4 / 3  # the others below 1: s = exp(mean) = 1, so m = (1.49 + 1) / 2 ≈ 1.25 < 1.28
    mask = torch.ones(1, 4, dtype=torch.bool)
    adv = torch.tensor([1.0], dtype=torch.float64)
    ent = torch.tensor([[2.0, 0.0, 0.0, 0.0]], dtype=torch.float64)  # w = 1 on the outlier, 0 elsewhere
    kw = dict(mixing="avg")
    br, g_br = loss_and_grad(get_objective("dhpo", clip="branch", **kw), lp, old, adv, mask)
    un, g_un = loss_and_grad(get_objective("dhpo", clip="unified", **kw), lp, old, adv, mask)
    assert bool(flags(br, "token").binding_high[0, 0]) and not flags(un, "mixed").binding_high[0, 0]
    assert bool(flags(un, "token").outside_high[0, 0]) and not flags(un, "token").binding_high.any()
    assert not torch.allclose(br.loss, un.loss)
    assert not torch.allclose(g_br, g_un)
    # With entropy mixing the outlier token is pure token-ratio (w=1) and is still capped in branch mode.
    e_br, _ = loss_and_grad(get_objective("dhpo-e", clip="branch"), lp, old, adv, mask, ent)
    assert bool(flags(e_br, "token").binding_high[0, 0])


@pytest.mark.parametrize("name", ["dhpo-a", "dhpo-e"])
@pytest.mark.parametrize("scope", ["sequence", "batch"])
def test_unclipped_gradient_is_eq17(name, scope):
    """Eq. 17 with eq. 7's weighting: ∂loss/∂log π_it = −m_it·A_i / (G·|o_i|) in the unclipped regime."""
    lp, old, adv, mask, ent = make_batch(spread=0.02, empty_row=False)
    obj = get_objective(name, entropy_scope=scope)
    out, grad = loss_and_grad(obj, lp, old, adv, mask, ent)
    assert not flags(out, "token").outside_high.any() and not flags(out, "sequence").outside_low.any()
    m = out.branches["mixed"].ratio
    G, lengths = lp.shape[0], mask.sum(-1, keepdim=True)
    assert len(set(lengths.flatten().tolist())) > 2, "the lengths must vary for the weighting to matter"
    expected = torch.where(mask, -m * adv[:, None] / (G * lengths), torch.zeros_like(m))
    torch.testing.assert_close(grad, expected, rtol=1e-10, atol=1e-14)
    # and m really is the mix of the two branches with the reported w
    w = out.mix_weight
    torch.testing.assert_close(m, w * out.branches["token"].ratio + (1 - w) * out.branches["sequence"].ratio)


def test_entropy_weight_is_min_max_per_sequence():
    lp, old, adv, mask, ent = make_batch(empty_row=False)
    w = get_objective("dhpo-e")(lp, old, adv, mask, ent).mix_weight
    for i in range(lp.shape[0]):
        h = ent[i][mask[i]]
        if h.numel() > 1:
            torch.testing.assert_close(w[i][mask[i]], (h - h.min()) / (h.max() - h.min()))
    assert (w[~mask] == 0).all()
