"""What objectives return: plain tensors (each ratio, its bounds, its per-side clip masks); telemetry's
`clip_flags` derives the outside / binding flags from them, masked to the valid tokens."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from dhpo_suite.train.objectives import OBJECTIVES, get_objective
from dhpo_suite.train.objectives.output import Branch
from dhpo_suite.train.telemetry import clip_flags
from tests.objectives.batches import make_batch


@pytest.mark.parametrize("name", OBJECTIVES)
def test_every_objective_returns_plain_detached_tensors(name):
    lp, old, adv, mask, ent = make_batch(spread=0.4)
    out = get_objective(name)(lp, old, adv, mask, ent)
    assert out.loss.requires_grad
    for br in out.branches.values():
        assert dataclasses.is_dataclass(br) and type(br) is Branch
        for f in dataclasses.fields(br):
            value = getattr(br, f.name)
            assert value is None or isinstance(value, (torch.Tensor, float, int)), (name, f.name, type(value))
            if isinstance(value, torch.Tensor):
                assert not value.requires_grad and value.shape == mask.shape, (name, f.name)
        assert (br.clip_low is None) == (br.clip_high is None), name


def test_clip_flags_outside_from_bounds_binding_from_clip_masks_only_on_valid_tokens():
    ratio = torch.tensor([[0.5, 0.5, 1.0, 2.0, 2.0]])
    mask = torch.tensor([[True, True, True, True, False]])
    clip_low = torch.tensor([[True, False, False, False, True]])
    clip_high = torch.tensor([[False, False, False, True, True]])
    f = clip_flags(Branch(ratio, 0.8, 1.28, clip_low, clip_high), mask)
    assert f.outside_low.tolist() == [[True, True, False, False, False]]
    assert f.outside_high.tolist() == [[False, False, False, True, False]]  # the masked token never counts
    assert f.binding_low.tolist() == [[True, False, False, False, False]]
    assert f.binding_high.tolist() == [[False, False, False, True, False]]
    region_only = clip_flags(Branch(ratio, 0.8, 1.28), mask)  # a region the objective does not clip
    assert region_only.outside_low.any() and not (region_only.binding_low | region_only.binding_high).any()
    diagnostic = clip_flags(Branch(ratio), mask)  # no region: nothing is outside or binding
    assert not any(getattr(diagnostic, k).any() for k in ("outside_low", "outside_high", "binding_low"))


def test_flags_read_after_the_update_are_those_of_the_call():
    """The output holds detached tensors: flags derived after backward() and an optimizer step are unchanged."""
    g = torch.Generator().manual_seed(0)
    lp = -torch.rand(4, 6, generator=g) - 0.1
    old = lp + torch.randn(4, 6, generator=g) * 0.4
    adv, mask, ent = torch.randn(4, generator=g), torch.ones(4, 6, dtype=torch.bool), torch.rand(4, 6, generator=g)
    param = lp.clone().requires_grad_(True)
    out = get_objective("dhpo-e")(param, old, adv, mask, ent)
    out.loss.backward()
    with torch.no_grad():
        param -= 10 * param.grad
    mixed = out.branches["mixed"]
    f = clip_flags(mixed, mask)
    m = mixed.ratio
    assert torch.equal(f.outside_low, m < mixed.low) and torch.equal(f.outside_high, m > mixed.high)
    assert (f.outside_low | f.outside_high).any()  # the draw does leave the region
