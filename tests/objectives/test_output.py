"""Branch flags: given directly or computed once, on first access (the loss never needs them)."""

from __future__ import annotations

import pytest
import torch

from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.objectives.output import Branch


def test_lazy_flags_are_computed_once_on_first_access():
    calls = []
    t = torch.tensor([[True, False]])

    def flags():
        calls.append(1)
        return t, ~t, t, ~t

    b = Branch(torch.ones(1, 2), 0.8, 1.28, flags=flags)
    assert calls == []
    assert torch.equal(b.outside_low, t) and torch.equal(b.binding_high, ~t) and torch.equal(b.outside_high, ~t)
    assert calls == [1]


@pytest.mark.parametrize("flags", [(None,) * 4, (torch.zeros(1, 2, dtype=torch.bool),) + (None,) * 3])
def test_branch_needs_all_four_flags_or_a_function(flags):
    with pytest.raises(TypeError, match="four flag tensors"):
        Branch(torch.ones(1, 2), None, None, *flags)
    with pytest.raises(TypeError, match="four flag tensors"):
        Branch(torch.ones(1, 2), None, None, torch.zeros(1, 2, dtype=torch.bool), *flags[1:], flags=lambda: ())


def test_lazy_flags_use_the_call_time_values():
    """Flags read after the optimizer changed nothing in the objective's tensors: same as read at once."""
    g = torch.Generator().manual_seed(0)
    lp = -torch.rand(4, 6, generator=g) - 0.1
    old = lp + torch.randn(4, 6, generator=g) * 0.4
    adv, mask, ent = torch.randn(4, generator=g), torch.ones(4, 6, dtype=torch.bool), torch.rand(4, 6, generator=g)
    out = get_objective("dhpo-e")(lp.clone().requires_grad_(True), old, adv, mask, ent)
    out.loss.backward()
    mixed = out.branches["mixed"]
    m = mixed.ratio
    assert torch.equal(mixed.outside_low, m < mixed.low) and torch.equal(mixed.outside_high, m > mixed.high)
    assert (mixed.outside_low | mixed.outside_high).any()  # the draw does leave the region
