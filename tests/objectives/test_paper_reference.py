"""The library against an independent fp64 reference written here from the paper's equations.

Nothing below calls the library to build an expectation: `reference_loss` is the paper's surrogate written
out response by response (eq. 2 token ratio, GSPO's sequence ratio, eq. 3 GRPO, eq. 6 GSPO, eq. 7 DHPO with
w of eq. 10 and the branch clip of eq. 11, CISPO's truncated weight), each aggregated as the paper writes it,
1/G Σ_i 1/|o_i| Σ_t. The library is called with no hyper-parameters (its defaults must be the paper's) on
batches of varied lengths whose sequence ratios leave their trust regions.
"""

from __future__ import annotations

import math

import pytest
import torch

from dhpo_suite.train.objectives import get_objective

F64 = torch.float64
# Appendix D clip ranges, typed from the paper: (ε_low, ε_high); DHPO's sequence branch as its token branch.
EPS = {"grpo": (0.2, 0.2), "gspo": (3e-4, 4e-4), "cispo": (10.0, 0.2), "dhpo": (0.2, 0.28)}
DHPO_SEQ_EPS = (0.2, 0.28)


def _clip(x: torch.Tensor, eps: tuple[float, float]) -> torch.Tensor:
    return x.clamp(1 - eps[0], 1 + eps[1])


def _min_max(h: list[float]) -> list[float]:
    """g of eq. 10 on one response's entropies (a one-token response: w is irrelevant there, since r = s)."""
    lo, hi = min(h), max(h)
    return [0.5 if hi == lo else (x - lo) / (hi - lo) for x in h]


def reference_loss(name: str, lp: torch.Tensor, old: torch.Tensor, adv: torch.Tensor, lengths: list[int],
                   entropy: torch.Tensor | None = None, *, clip: str = "branch", eps=None,
                   seq_eps=None) -> torch.Tensor:
    """−J for objective `name` (grpo, gspo, cispo, dhpo-a, dhpo-e), one response at a time, fp64.

    lp, old, entropy: (G, T) with response i's tokens in [:lengths[i]] (the rest is ignored); adv: (G,).
    """
    eps = eps or EPS["dhpo" if name.startswith("dhpo") else name]
    seq_eps = seq_eps or DHPO_SEQ_EPS
    per_response = []
    for i, n in enumerate(lengths):
        lp_i, old_i, a = lp[i, :n], old[i, :n], adv[i]
        r = torch.exp(lp_i - old_i)  # eq. 2
        s_i = torch.exp((lp_i - old_i).mean()).detach()  # GSPO's sequence ratio, a constant (sg)
        s = s_i * torch.exp(lp_i - lp_i.detach())  # s_it = sg[s_i]·π_it/sg[π_it]: value s_i, gradient s_i·∇log π
        if name == "grpo":  # eq. 3
            terms = torch.minimum(r * a, _clip(r, eps) * a)
        elif name == "gspo":  # eq. 6
            terms = torch.minimum(s * a, _clip(s, eps) * a)
        elif name == "cispo":  # sg[clip(r)]·A·log π; ε_low ≥ 1: no lower bound on the weight
            weight = r.clamp(max=1 + eps[1]) if eps[0] >= 1 else _clip(r, eps)
            terms = weight.detach() * a * lp_i
        else:  # eq. 7: m = w·r + (1−w)·s, w = 0.5 (DHPO-A) or g(sg[H]) (eq. 10)
            w = torch.full_like(r, 0.5) if name == "dhpo-a" else \
                torch.tensor(_min_max(entropy[i, :n].tolist()), dtype=F64)
            m = w * r + (1 - w) * s
            m_clip = w * _clip(r, eps) + (1 - w) * _clip(s, seq_eps) if clip == "branch" else _clip(m, eps)  # eq. 11
            terms = torch.minimum(m * a, m_clip * a)
        per_response.append(terms.sum() / n)  # 1/|o_i| Σ_t
    return -torch.stack(per_response).mean()  # 1/G Σ_i, negated: a loss


def varied_batch(seed: int = 0, lengths=(8, 2, 5, 1, 7), seq_log_ratio=(0.45, -0.35, 0.05, -0.4, 0.3)):
    """fp64 batch whose responses have the given lengths and mean log-ratios (sequence ratios e^0.45 ≈ 1.57,
    e^-0.35 ≈ 0.70, ...: most outside every trust region), with token noise and garbage in the padding."""
    g = torch.Generator().manual_seed(seed)
    G, T = len(lengths), max(lengths)
    old = -torch.rand(G, T, generator=g, dtype=F64) * 3 - 0.05
    noise = torch.randn(G, T, generator=g, dtype=F64) * 0.5
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    noise = torch.where(mask, noise, 0.0)
    noise = noise - noise.sum(-1, keepdim=True) / torch.tensor(lengths, dtype=F64)[:, None] * mask
    lp = old + torch.where(mask, noise + torch.tensor(seq_log_ratio, dtype=F64)[:, None], 0.0)
    lp = torch.where(mask, lp, torch.rand(G, T, generator=g, dtype=F64) * 50)  # padding must not matter
    adv = torch.tensor([1.0, -0.7, 0.4, 1.3, -1.1], dtype=F64)[:G]
    entropy = torch.rand(G, T, generator=g, dtype=F64) * 2
    return lp, old, adv, mask, entropy, list(lengths)


def _ours(name, lp, old, adv, mask, entropy, **hp):
    x = lp.detach().clone().requires_grad_(True)
    out = get_objective(name, **hp)(x, old, adv, mask, entropy)
    (grad,) = torch.autograd.grad(out.loss, x)
    return out, grad


def _reference(name, lp, old, adv, lengths, entropy, **kw):
    x = lp.detach().clone().requires_grad_(True)
    loss = reference_loss(name, x, old, adv, lengths, entropy, **kw)
    (grad,) = torch.autograd.grad(loss, x)
    return loss, grad


@pytest.mark.parametrize("name,clip", [("grpo", None), ("gspo", None), ("cispo", None), ("dhpo-a", "branch"),
                                       ("dhpo-e", "branch"), ("dhpo-a", "unified"), ("dhpo-e", "unified")])
@pytest.mark.parametrize("seed", [0, 1])
def test_defaults_equal_the_paper_reference(name, clip, seed):
    lp, old, adv, mask, ent, lengths = varied_batch(seed)
    s = torch.exp(torch.tensor([((lp - old)[i, :n]).mean() for i, n in enumerate(lengths)]))
    low, high = EPS["dhpo" if name.startswith("dhpo") else name]
    outside = int(((s < 1 - low) | (s > 1 + high)).sum())
    assert outside >= (2 if name != "cispo" else 0), "sequence ratios must leave the region"
    out, grad = _ours(name, lp, old, adv, mask, ent, **({"clip": clip} if clip else {}))
    ref, ref_grad = _reference(name, lp, old, adv, lengths, ent, clip=clip or "branch")
    torch.testing.assert_close(out.loss, ref, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-12, atol=1e-14)
    assert (grad[~mask] == 0).all()


def test_the_reference_sees_the_clip_and_the_weighting():
    """Guards the test above: on this batch the clip changes the loss, and so would token-mean weighting."""
    lp, old, adv, mask, ent, lengths = varied_batch()
    for name in ("grpo", "dhpo-e"):
        ref, _ = _reference(name, lp, old, adv, lengths, ent)
        unclipped, _ = _reference(name, lp, old, adv, lengths, ent, eps=(0.99, 1e3), seq_eps=(0.99, 1e3))
        assert abs(float(ref.detach() - unclipped.detach())) > 1e-3, name
        token_mean = get_objective(name, loss_agg_mode="token-mean")(lp, old, adv, mask, ent).loss
        assert abs(float(ref.detach() - token_mean.detach())) > 1e-3, name


# ---- eq. 11 on hand-built tokens: branch vs unified, and the variants that must fail ----

def _one_response(log_r: list[float], entropy: list[float], adv: float):
    """One response (1, T) with the given per-token log-ratios around a fixed π_old."""
    old = torch.full((1, len(log_r)), -1.0, dtype=F64)
    return old + torch.tensor([log_r], dtype=F64), old, torch.tensor([adv], dtype=F64), \
        torch.ones(1, len(log_r), dtype=torch.bool), torch.tensor([entropy], dtype=F64)


# Response 1, A > 0, s = 0.7 (below 1−ε_low: outside on the side that does not bind for A > 0).
# Token 0: w = 0.3, r = 1.6 (above 1+ε_high: binding). Token 1: w = 0 (min entropy), token 2: w = 1 (max).
R_UP = [math.log(1.6), math.log(0.7), 3 * math.log(0.7) - math.log(1.6) - math.log(0.7)]
H_UP = [0.3, 0.0, 1.0]
# Response 2, A > 0, s = 1.5 (above 1+ε_high: binding). Token 0: w = 0.7, r = 0.5 (below 1−ε_low: not binding).
R_DOWN = [math.log(0.5), math.log(1.5), 3 * math.log(1.5) - math.log(0.5) - math.log(1.5)]
H_DOWN = [0.7, 0.0, 1.0]


@pytest.mark.parametrize("log_r,entropy,token0", [
    # branch clip: m = 0.3·1.6 + 0.7·0.7 = 0.97, m̃ = 0.3·1.28 + 0.7·0.8 = 0.944 → min 0.944, clipped: no gradient.
    # (a per-branch min would give 0.3·1.28 + 0.7·0.7 = 0.874 and a gradient through s.)
    (R_UP, H_UP, dict(value=0.944, grad=0.0)),
    # branch clip: m = 0.7·0.5 + 0.3·1.5 = 0.8, m̃ = 0.7·0.8 + 0.3·1.28 = 0.944 → min 0.8, unclipped: ∂/∂log π = m.
    # (a per-branch min would give 0.7·0.5 + 0.3·1.28 = 0.734 and a gradient through r only, 0.35.)
    (R_DOWN, H_DOWN, dict(value=0.8, grad=0.8)),
])
def test_branch_clipping_eq11_by_hand(log_r, entropy, token0):
    lp, old, adv, mask, ent = _one_response(log_r, entropy, adv=1.0)
    out, grad = _ours("dhpo-e", lp, old, adv, mask, ent)
    torch.testing.assert_close(out.mix_weight[0], torch.tensor([entropy[0], 0.0, 1.0], dtype=F64))
    # per-token surrogate (loss_mat is −min(m·A, m̃·A)) and gradient, G = 1, |o| = 3
    assert -float(out.loss_mat[0, 0]) == pytest.approx(token0["value"], rel=1e-12)
    assert -float(grad[0, 0]) * 3 == pytest.approx(token0["grad"], abs=1e-12)
    ref, ref_grad = _reference("dhpo-e", lp, old, adv, [3], ent)
    torch.testing.assert_close(out.loss, ref, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(grad, ref_grad, rtol=1e-12, atol=1e-14)


def test_unified_clipping_uses_the_token_eps():
    """The ablation clips the mix with the token ε: with a sequence ε of 0.05/0.1, m = 1.2 (inside the token
    region 0.8..1.28, outside the sequence region 0.95..1.1) is not clipped, and the branch clip differs."""
    log_r = [math.log(1.6), math.log(1.0), 3 * math.log(1.2) - math.log(1.6)]  # s = 1.2
    lp, old, adv, mask, ent = _one_response(log_r, [0.5, 0.0, 1.0], adv=1.0)
    hp = dict(seq_eps_low=0.05, seq_eps_high=0.1)
    unified, g_uni = _ours("dhpo-e", lp, old, adv, mask, ent, clip="unified", **hp)
    branch, g_br = _ours("dhpo-e", lp, old, adv, mask, ent, clip="branch", **hp)
    # token 1 (w = 0, r = 1): m = s = 1.2. Unified, token ε: unclipped, gradient m = 1.2 (×1/3).
    assert -float(unified.loss_mat[0, 1]) == pytest.approx(1.2, rel=1e-12)
    assert -float(g_uni[0, 1]) * 3 == pytest.approx(1.2, rel=1e-12)
    # Branch: the sequence branch is clipped at 1.1 and binds (A > 0): value 1.1, no gradient.
    assert -float(branch.loss_mat[0, 1]) == pytest.approx(1.1, rel=1e-12)
    assert float(g_br[0, 1]) == 0.0
    # token 0 (w = 0.5, r = 1.6): unified m = 1.4 > 1.28 is clipped: value 1.28, no gradient.
    assert -float(unified.loss_mat[0, 0]) == pytest.approx(1.28, rel=1e-12)
    assert float(g_uni[0, 0]) == 0.0
    for clip, out, g in (("unified", unified, g_uni), ("branch", branch, g_br)):
        ref, ref_grad = _reference("dhpo-e", lp, old, adv, [3], ent, clip=clip, seq_eps=(0.05, 0.1))
        torch.testing.assert_close(out.loss, ref, rtol=1e-12, atol=1e-14)
        torch.testing.assert_close(g, ref_grad, rtol=1e-12, atol=1e-14)


# ---- eq. 17 with eq. 7's weighting ----

@pytest.mark.parametrize("name", ["dhpo-a", "dhpo-e"])
def test_unclipped_gradient_is_eq17_with_eq7_weighting(name):
    """∇J = 1/G Σ_i 1/|o_i| Σ_t m_it·A_i·∇log π_it: per token, ∂loss/∂log π_it = −m_it·A_i / (G·|o_i|).
    m is computed here (own w, own s), not read back from the library."""
    lengths = [8, 2, 5, 1, 7]
    lp, old, adv, mask, ent, _ = varied_batch(3, lengths, seq_log_ratio=(0.02, -0.03, 0.01, -0.02, 0.03))
    lp = torch.where(mask, old + (lp - old) * 0.2, lp)  # every ratio well inside 0.8..1.28
    _, grad = _ours(name, lp, old, adv, mask, ent)
    G = len(lengths)
    for i, n in enumerate(lengths):
        lr = (lp - old)[i, :n]
        r, s = torch.exp(lr), torch.exp(lr.mean())
        assert ((r > 0.8) & (r < 1.28)).all() and 0.8 < s < 1.28
        w = torch.full_like(r, 0.5) if name == "dhpo-a" else torch.tensor(_min_max(ent[i, :n].tolist()), dtype=F64)
        m = w * r + (1 - w) * s
        torch.testing.assert_close(grad[i, :n], -m * adv[i] / (G * n), rtol=1e-12, atol=1e-15)
    # token-mean weighting (1/Σ|o_i| for every token) is far from eq. 17 on these lengths
    _, token_mean = _ours(name, lp, old, adv, mask, ent, loss_agg_mode="token-mean")
    assert float((token_mean - grad).norm() / grad.norm()) > 0.3
