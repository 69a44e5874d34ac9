"""The objectives. Each is one short function; defaults are the paper's (Appendix D).

Every objective aggregates as the paper writes its losses (eqs. 3, 6, 7): 1/G Σ_i 1/|o_i| Σ_t, i.e.
`seq-mean-token-mean` (PAPER_AGG_MODE); `token-mean` (DAPO) and the other modes are options.

Every function takes the checked `Inputs` of a micro-batch and returns an `ObjectiveOutput` whose
`loss` is to be minimised (the negated surrogate J). docs/objectives.md maps paper equations here.
"""

from __future__ import annotations

import math
from dataclasses import replace

import torch

from dhpo_suite.train.objectives.aggregation import PAPER_AGG_MODE, aggregate
from dhpo_suite.train.objectives.output import Branch, ObjectiveOutput
from dhpo_suite.train.objectives.parts import clipped_surrogate, entropy_weight, sequence_log_ratio, sg_sequence_ratio
from dhpo_suite.train.objectives.registry import Inputs, register_objective


def _ratios(x: Inputs) -> tuple[torch.Tensor, torch.Tensor]:
    """(r_tok, s_seq): the token ratio π/π_old (eq. 2) and GSPO's stop-gradient sequence ratio, both (B, T)."""
    return torch.exp(x.log_ratio), sg_sequence_ratio(x.log_prob, sequence_log_ratio(x.log_ratio, x.mask))


def _output(x: Inputs, loss_mat: torch.Tensor, mode: str, w: torch.Tensor | None = None,
            **branches: Branch) -> ObjectiveOutput:
    """The aggregated loss and the detached per-token tensors telemetry reads."""
    return ObjectiveOutput(
        loss=aggregate(loss_mat, x.mask, mode, **x.agg),
        loss_mat=loss_mat.detach(),
        response_mask=x.mask,
        advantages=x.adv,
        log_ratio=x.log_ratio.detach(),
        branches={k: replace(b, ratio=b.ratio.detach()) for k, b in branches.items()},
        mix_weight=None if w is None else w.detach(),
        entropy=x.entropy,
        nonfinite=x.nonfinite,
    )


@register_objective("dhpo", needs_entropy=lambda hparams: hparams["mixing"] == "entropy")  # w = g(H), eq. 10
def dhpo(
    x: Inputs,
    *,
    mixing: str = "entropy",
    clip: str = "branch",
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    seq_eps_low: float = 0.2,
    seq_eps_high: float = 0.28,
    avg_weight: float = 0.5,
    entropy_scope: str = "sequence",
    loss_agg_mode: str = PAPER_AGG_MODE,
) -> ObjectiveOutput:
    """DHPO (paper eq. 7): loss = −min(m·A, m̃·A), m = w·r_tok + (1−w)·s_seq, aggregated 1/G Σ_i 1/|o_i| Σ_t.

    w = avg_weight (DHPO-A, 0.5) or g(sg[H]) (DHPO-E, eq. 10: per-response min-max entropy).
    Branch clipping (eq. 11):
        m̃ = w·clip(r_tok, 1−ε_low, 1+ε_high) + (1−w)·clip(s_seq, 1−ε^seq_low, 1+ε^seq_high).
    Unified clipping (the ablation): m̃ = clip(m, 1−ε_low, 1+ε_high), with the token ε.
    In the unclipped regime ∇J = 1/G Σ_i 1/|o_i| Σ_t m_it·A_i·∇log π_it (eq. 17): w and the ratios'
    sg parts are constants. Shapes: every tensor (B, T).
    """
    r, s = _ratios(x)
    if mixing == "entropy" and x.entropy is not None:  # Objective.__call__ refuses a missing entropy
        w = entropy_weight(x.entropy, x.mask, entropy_scope)
    else:
        w = torch.full_like(r, avg_weight)
    m = torch.lerp(s, r, w)  # eq. 7's hybrid ratio w·r + (1−w)·s, in one pass
    tok, seq = (1 - eps_low, 1 + eps_high), (1 - seq_eps_low, 1 + seq_eps_high)
    if clip == "branch":  # eq. 11: each ratio clipped in its own region, then mixed
        r_clip, s_clip = r.clamp(*tok), s.clamp(*seq)
        m_clip = torch.lerp(s_clip, r_clip, w)
    else:  # unified (the ablation): the mix clipped with the token ε
        m_clip = m.clamp(*tok)
    loss_mat, low, high = clipped_surrogate(m, m_clip, x.adv)  # eq. 7
    # What clipped where: under branch clipping a ratio's clip binds where it moved that ratio and the min took the
    # clipped side; the mix has no region of its own then (reported against the token ε).
    mixed = Branch(m, *tok, low, high)
    if clip == "unified":
        token, sequence = Branch(r, *tok), Branch(s, *seq)
    else:
        token = Branch(r, *tok, low & (r_clip > r), high & (r_clip < r))
        sequence = Branch(s, *seq, low & (s_clip > s), high & (s_clip < s))
    return _output(x, loss_mat, loss_agg_mode, w, token=token, sequence=sequence, mixed=mixed)


@register_objective("grpo")
def grpo(
    x: Inputs,
    *,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    dual_clip: float | None = None,
    loss_agg_mode: str = PAPER_AGG_MODE,
) -> ObjectiveOutput:
    """GRPO (paper eq. 3): loss = −min(r·A, clip(r, 1−ε_low, 1+ε_high)·A), r = π/π_old (token ratio, eq. 2).

    dual_clip=c additionally caps the loss of A<0 tokens at −c·A (verl's `vanilla` uses c=3).
    """
    r, s = _ratios(x)
    loss_mat, low, high = clipped_surrogate(r, r.clamp(1 - eps_low, 1 + eps_high), x.adv)
    if dual_clip is not None:  # the cap removes the gradient of A<0 tokens whose ratio is above c
        capped = (x.adv < 0) & (loss_mat > -x.adv * dual_clip)
        loss_mat = torch.where(capped, -x.adv * dual_clip, loss_mat)
        high = high | capped
    return _output(x, loss_mat, loss_agg_mode, token=Branch(r, 1 - eps_low, 1 + eps_high, low, high),
                   sequence=Branch(s))


@register_objective("gspo")
def gspo(
    x: Inputs,
    *,
    eps_low: float = 3e-4,
    eps_high: float = 4e-4,
    loss_agg_mode: str = PAPER_AGG_MODE,
) -> ObjectiveOutput:
    """GSPO (paper eq. 6), token form: loss = −min(s_it·A, clip(s_it, 1−ε_low, 1+ε_high)·A).

    s_it = sg[s_i]·π_it/sg[π_it], s_i = exp(mean_t log r_it): GSPO's sequence ratio (Zheng et al., 2025).
    """
    r, s = _ratios(x)
    loss_mat, low, high = clipped_surrogate(s, s.clamp(1 - eps_low, 1 + eps_high), x.adv)
    return _output(x, loss_mat, loss_agg_mode, token=Branch(r),
                   sequence=Branch(s, 1 - eps_low, 1 + eps_high, low, high))


@register_objective("gmpo")
def gmpo(
    x: Inputs,
    *,
    eps_low: float = 0.4,
    eps_high: float = 0.4,
    loss_agg_mode: str = PAPER_AGG_MODE,
) -> ObjectiveOutput:
    """GMPO (geometric-mean policy optimisation, Zhao et al., 2025):
    loss_i = −A_i·exp(mean_t sgn(A)·min(sgn(A)·log r, sgn(A)·clip(log r))).

    Clipping happens per token in log space, [−ε_low, ε_high]. The sequence loss is placed on each
    valid token, so seq-mean-token-mean gives mean_i loss_i.
    """
    r, s = _ratios(x)
    sgn = torch.sign(x.adv)
    lr_clip = x.log_ratio.clamp(-eps_low, eps_high)
    lr_pess = sgn * torch.minimum(sgn * x.log_ratio, sgn * lr_clip)
    geo = torch.exp(sequence_log_ratio(lr_pess, x.mask))
    seq_adv = sequence_log_ratio(x.adv, x.mask)
    loss_mat = (-seq_adv * geo).unsqueeze(-1).expand_as(r)
    clipped = lr_pess != x.log_ratio  # the min took the clipped log-ratio: this token's gradient is gone
    # The region is reported in ratio space; binding also needs r beyond exp(±ε), so that rounding at the bound
    # never counts a token as binding but not outside.
    lo, hi = math.exp(-eps_low), math.exp(eps_high)
    token = Branch(r, lo, hi, clipped & (x.adv < 0) & (r < lo), clipped & (x.adv > 0) & (r > hi))
    return _output(x, loss_mat, loss_agg_mode, token=token, sequence=Branch(s))


@register_objective("cispo")
def cispo(
    x: Inputs,
    *,
    eps_low: float = 10.0,
    eps_high: float = 0.2,
    loss_agg_mode: str = PAPER_AGG_MODE,
) -> ObjectiveOutput:
    """CISPO (MiniMax-M1): loss = −sg[clip(r, 1−ε_low, 1+ε_high)]·A·log π.

    The clip truncates the importance weight and never removes a token's gradient; "binding" reports
    the tokens whose weight was truncated. Defaults are the paper's Appendix D: ε_low = 10, ε_high = 0.2.
    ε_low ≥ 1 means no lower bound (as in verl's cispo, whose clamp at 1−ε_low < 0 never acts on r > 0);
    the reported bound is then 0.
    """
    r, s = _ratios(x)
    low, high = max(1 - eps_low, 0.0), 1 + eps_high
    loss_mat = -r.clamp(low, high).detach() * x.adv * x.log_prob
    # The weight is truncated wherever r leaves [low, high]: there the clip binds.
    return _output(x, loss_mat, loss_agg_mode, token=Branch(r, low, high, r < low, r > high), sequence=Branch(s))


@register_objective("sapo")
def sapo(
    x: Inputs,
    *,
    tau_pos: float = 1.0,
    tau_neg: float = 1.05,
    loss_agg_mode: str = PAPER_AGG_MODE,
) -> ObjectiveOutput:
    """SAPO: a soft gate instead of a hard clip, loss = −f(r)·A with f(r) = σ(τ(r−1))·4/τ,
    τ = τ_pos for A>0 else τ_neg. No trust region: both branches are reported for diagnosis only.
    """
    r, s = _ratios(x)
    tau = torch.where(x.adv > 0, torch.full_like(r, tau_pos), torch.full_like(r, tau_neg))
    loss_mat = -torch.sigmoid(tau * (r - 1)) * (4 / tau) * x.adv
    return _output(x, loss_mat, loss_agg_mode, token=Branch(r), sequence=Branch(s))
