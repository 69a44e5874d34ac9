"""Hand-built cases for each clip-fraction definition: outside vs binding, low vs high, per branch."""

from __future__ import annotations

import math

import pytest
import torch

from dhpo_suite.runs import TelemetrySpec
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import TelemetryAccumulator
from tests.telemetry.helpers import branch, make_output

# One valid token per response: (ratio, advantage) -> what the trust region [0.8, 1.28] says about it.
CASES = [
    (0.7, +1.0),  # below 1-ε, A>0: outside_low, NOT binding (the unclipped term is the min)
    (0.7, -1.0),  # below 1-ε, A<0: outside_low and binding_low
    (1.4, +1.0),  # above 1+ε, A>0: outside_high and binding_high
    (1.4, -1.0),  # above 1+ε, A<0: outside_high, NOT binding
    (1.0, +1.0),  # inside
]
EXPECT = {"outside_low": 2 / 5, "outside_high": 2 / 5, "binding_low": 1 / 5, "binding_high": 1 / 5, "binding": 2 / 5}


def one_token_rows():
    r = torch.tensor([c[0] for c in CASES])[:, None].expand(5, 2).clone()
    adv = torch.tensor([c[1] for c in CASES])[:, None]
    mask = torch.tensor([[True, False]] * 5)
    return r, adv, mask


def scalars(out):
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=2))
    acc.add_update(out, response_ids=torch.arange(5))
    return acc.to_record(0)


@pytest.mark.parametrize("name", ["token", "sequence", "mixed"])
def test_hand_built_branch(name):
    """Only branch `name` carries the cases; the other branches sit at ratio 1 (inside)."""
    r, adv, mask = one_token_rows()
    ones = torch.ones_like(r)
    out = make_output(torch.zeros_like(r), adv, mask, mixed=True, w=torch.full_like(r, 0.5))
    adv_full = out.advantages
    branches = {b: branch(r if b == name else ones, 0.8, 1.28, adv_full, mask) for b in ("token", "sequence", "mixed")}
    out = type(out)(**{**out.__dict__, "branches": branches})
    rec = scalars(out)
    for b in ("token", "sequence", "mixed"):
        for k, v in EXPECT.items():
            assert rec.scalars[f"clip/{b}/{k}"] == pytest.approx(v if b == name else 0.0), (b, k)
    # The outliers of that branch: the four outside tokens, farthest first, with side and binding.
    outl = [o for o in rec.outliers if o["branch"] == name]
    assert [(o["side"], o["binding"], o["response_id"]) for o in outl] == [
        ("low", False, 0), ("low", True, 1), ("high", True, 2), ("high", False, 3)]  # ties: by response id
    assert outl[0]["distance"] == pytest.approx(math.log(0.8) - math.log(0.7), rel=1e-6)
    assert outl[2]["distance"] == pytest.approx(math.log(1.4) - math.log(1.28), rel=1e-6)
    assert not [o for o in rec.outliers if o["branch"] != name]


@pytest.mark.parametrize(
    "algo, hp, name",
    [
        ("grpo", {"eps_low": 0.2, "eps_high": 0.28}, "token"),
        ("gspo", {"eps_low": 0.2, "eps_high": 0.28}, "sequence"),
        ("dhpo", {"clip": "unified", "mixing": "avg"}, "mixed"),
    ],
)
def test_objective_library_flags_give_the_same_fractions(algo, hp, name):
    """The real objectives' Branch flags, reduced by the telemetry, give the hand-derived fractions."""
    r, adv, mask = one_token_rows()
    old = torch.full_like(r, -1.0)
    out = get_objective(algo, **hp)(old + r.log(), old, adv.expand_as(r), mask, entropy=torch.ones_like(r))
    rec = scalars(out)
    for k, v in EXPECT.items():
        assert rec.scalars[f"clip/{name}/{k}"] == pytest.approx(v), k


def test_branch_without_trust_region_has_no_clip_metrics():
    r, adv, mask = one_token_rows()
    old = torch.full_like(r, -1.0)
    rec = scalars(get_objective("grpo")(old + r.log(), old, adv.expand_as(r), mask))
    assert "clip/token/binding" in rec.scalars and "ratio/sequence/mean" in rec.scalars
    assert not [k for k in rec.scalars if k.startswith("clip/sequence/")]
    assert "entropy/mean" not in rec.scalars and "w/mean" not in rec.scalars  # not measured: absent


def test_log_ratio_edges_hold_the_clip_bounds_exactly():
    r, adv, mask = one_token_rows()
    old = torch.full_like(r, -1.0)
    rec = scalars(get_objective("gspo")(old + r.log(), old, adv.expand_as(r), mask))
    edges = rec.distributions["log_ratio/sequence/pos"].edges
    assert math.log(1 - 3e-4) in edges.tolist() and math.log(1 + 4e-4) in edges.tolist()
    tok = rec.distributions["log_ratio/token/neg"].edges  # diagnostic branch: default layout
    assert math.log(0.8) in tok.tolist() and math.log(1.28) in tok.tolist()
    # Every valid token is counted once across the three advantage signs.
    total = sum(rec.distributions[f"log_ratio/sequence/{s}"].total for s in ("pos", "neg", "zero"))
    assert total == mask.sum()
