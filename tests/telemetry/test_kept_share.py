"""κ, the share of a token's gradient its clip kept (telemetry/kept.py), against autograd and hand-worked cases.

The reference is outside the telemetry code: the library objective's own gradient of log π, with its clip and
with the trust regions opened wide (no clip can act), token by token.
"""

from __future__ import annotations

import math

import pytest
import torch

from dhpo_suite.runs import TelemetrySpec
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import TelemetryAccumulator
from dhpo_suite.train.telemetry.kept import kept_share

WIDE = dict(eps_low=0.999999, eps_high=1e6)  # a trust region no ratio of these batches leaves
ARMS = {  # the arms of issue 26's grid, plus GSPO (a sequence clip)
    "grpo": ("grpo", {}),
    "grpo-clip-higher": ("grpo", dict(eps_high=0.28)),
    "gspo": ("gspo", dict(eps_low=0.02, eps_high=0.03)),
    "dhpo-e-branch": ("dhpo-e", dict(clip="branch")),
    "dhpo-e-unified": ("dhpo-e", dict(clip="unified")),
    "dhpo-a": ("dhpo-a", {}),
}


def _wide(algo: str, hp: dict) -> dict:
    extra = dict(seq_eps_low=WIDE["eps_low"], seq_eps_high=WIDE["eps_high"]) if algo.startswith("dhpo") else {}
    return {**hp, **WIDE, **extra}


def _batch(seed: int, B: int = 6, T: int = 9):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    log_prob = old + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.3  # |log r| ~ 0.3: many clips act
    adv = torch.randn(B, 1, generator=g, dtype=torch.float64).expand(B, T)
    mask = torch.arange(T)[None, :] < torch.randint(2, T + 1, (B, 1), generator=g)
    entropy = torch.rand(B, T, generator=g, dtype=torch.float64) * 2
    return log_prob, old, adv, mask, entropy


def _grad(algo: str, hp: dict, log_prob, old, adv, mask, entropy):
    lp = log_prob.clone().requires_grad_(True)
    out = get_objective(algo, **hp)(lp, old, adv, mask, entropy=entropy)
    out.loss.backward()
    return out, lp.grad


@pytest.mark.parametrize("arm", ARMS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kappa_is_the_clipped_over_the_unclipped_gradient(arm, seed):
    algo, hp = ARMS[arm]
    batch = _batch(seed)
    out, g_clip = _grad(algo, hp, *batch)
    _, g_open = _grad(algo, _wide(algo, hp), *batch)
    mask = batch[3] & (g_open.abs() > 1e-12)
    kappa = kept_share(out)
    assert torch.allclose(kappa[mask], (g_clip / g_open)[mask], atol=1e-9), arm
    assert ((kappa[mask] < 1).sum() > 0), f"{arm}: no clip acted; the case tests nothing"


def test_hand_worked_dhpo_a_branch_clip():
    """One response, two tokens, log r = ±log 1.5, so s = 1 (inside its region) and w = 0.5 (DHPO-A), A = +1.

    Token 1: r = 1.5 > 1.28: m = 1.25, m̃ = 0.5·1.28 + 0.5·1 = 1.14 < m, the clip acts; only the sequence half
    keeps its gradient: κ = 0.5·1 / 1.25 = 0.4. Token 2: r = 2/3 < 0.8 with A > 0: the unclipped side is the min,
    κ = 1. GRPO on the same tokens: token 1 binds (κ = 0), token 2 does not (κ = 1).
    """
    old = torch.tensor([[-1.0, -1.0]], dtype=torch.float64)
    lp = old + torch.tensor([[math.log(1.5), -math.log(1.5)]], dtype=torch.float64)
    adv, mask = torch.ones(1, 2, dtype=torch.float64), torch.ones(1, 2, dtype=torch.bool)
    dhpo = kept_share(get_objective("dhpo-a")(lp, old, adv, mask))
    assert dhpo.tolist()[0] == pytest.approx([0.4, 1.0], abs=1e-12)
    assert kept_share(get_objective("grpo")(lp, old, adv, mask)).tolist()[0] == [0.0, 1.0]
    unified = kept_share(get_objective("dhpo-a", clip="unified")(lp, old, adv, mask))
    assert unified.tolist()[0] == [1.0, 1.0]  # unified clips m (1.25, 0.83) against [0.8, 1.28]: both inside


def test_step_record_reports_kept_share_per_branch():
    """The accumulator's clip/kept_share and clip/{b}/binding_kept are the hand-worked κ's means."""
    old = torch.tensor([[-1.0, -1.0]], dtype=torch.float64)
    lp = old + torch.tensor([[math.log(1.5), -math.log(1.5)]], dtype=torch.float64)
    adv, mask = torch.ones(1, 2, dtype=torch.float64), torch.ones(1, 2, dtype=torch.bool)
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=2))
    acc.add_update(get_objective("dhpo-a")(lp, old, adv, mask), response_ids=[0])
    s = acc.to_record(1).scalars
    assert s["clip/kept_share"] == pytest.approx((0.4 + 1.0) / 2)
    assert s["clip/token/binding_kept"] == pytest.approx(0.4)  # the token branch's binding token keeps 40 %
    assert s["clip/mixed/binding_kept"] == pytest.approx(0.4)
    assert "clip/sequence/binding_kept" not in s  # s = 1 never binds
    grpo = TelemetryAccumulator(TelemetrySpec(max_response_length=2))
    grpo.add_update(get_objective("grpo")(lp, old, adv, mask), response_ids=[0])
    g = grpo.to_record(1).scalars
    assert g["clip/kept_share"] == pytest.approx(0.5) and g["clip/token/binding_kept"] == 0.0
