"""Property tests on random shapes and masks, and micro-batch invariance."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dhpo_suite.train.objectives import AGG_MODES, OBJECTIVES, get_objective
from dhpo_suite.train.telemetry import clip_flags
from tests.objectives.batches import make_batch

shapes = st.tuples(st.integers(1, 6), st.integers(1, 12), st.integers(0, 10_000))


@settings(max_examples=25, deadline=None)
@given(shapes, st.sampled_from(OBJECTIVES), st.sampled_from(AGG_MODES), st.floats(0.0, 2.0))
def test_any_batch_gives_a_finite_loss_and_gradient(shape, name, agg, spread):
    B, T, seed = shape
    lp, old, adv, mask, ent = make_batch(B, T, seed=seed, spread=spread, empty_row=seed % 2 == 0)
    out = get_objective(name, loss_agg_mode=agg)(lp, old, adv, mask, ent)
    (g,) = torch.autograd.grad(out.loss, lp)
    assert torch.isfinite(out.loss) and torch.isfinite(g).all()
    assert (g[~mask] == 0).all(), "masked tokens must get no gradient"
    for key, br in out.branches.items():
        f = clip_flags(br, out.response_mask)
        for flag in (f.outside_low, f.outside_high, f.binding_low, f.binding_high):
            assert not flag[~mask].any()
        if key != "mixed":  # a clip can only bind where the value is outside its region
            assert not (f.binding_low & ~f.outside_low).any() and not (f.binding_high & ~f.outside_high).any()


def _split_losses(obj, lp, old, adv, mask, ent, cut):
    """Sum of micro-batch losses with the global normalisation facts, and its gradient."""
    lp = lp.detach().clone().requires_grad_(True)
    kw = dict(batch_num_tokens=mask.sum(), global_batch_size=(mask.sum(-1) > 0).sum())
    total = sum(
        obj(lp[s], old[s], adv[s], mask[s], ent[s], **kw).loss for s in (slice(0, cut), slice(cut, None))
    )
    (g,) = torch.autograd.grad(total, lp)
    return total, g


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 8), st.integers(1, 10), st.integers(0, 10_000), st.sampled_from(AGG_MODES))
def test_dhpo_e_default_scope_is_micro_batch_invariant(B, T, seed, agg):
    lp, old, adv, mask, ent = make_batch(B, T, seed=seed, spread=0.5)
    obj = get_objective("dhpo-e", loss_agg_mode=agg)
    whole = obj(lp, old, adv, mask, ent)
    (g_whole,) = torch.autograd.grad(whole.loss, lp)
    total, g = _split_losses(obj, lp, old, adv, mask, ent, cut=B // 2)
    torch.testing.assert_close(total, whole.loss, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(g, g_whole, rtol=1e-10, atol=1e-12)


def test_batch_scope_is_not_micro_batch_invariant():
    """The documented reason the default scope is per sequence."""
    lp, old, adv, mask, ent = make_batch(6, 9, seed=3, spread=0.5, empty_row=False)
    ent[3:] += 5.0  # the second half has much higher entropy: batch min-max changes with the split
    obj = get_objective("dhpo-e", entropy_scope="batch")
    whole = obj(lp, old, adv, mask, ent).loss
    total, _ = _split_losses(obj, lp, old, adv, mask, ent, cut=3)
    assert not torch.allclose(total, whole)
