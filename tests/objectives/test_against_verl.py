"""Our objectives against verl 0.9.1's registered losses, values and gradients, fp64."""

import pytest
import torch
from verl.trainer.ppo.core_algos import get_policy_loss_fn
from verl.workers.config.actor import FSDPActorConfig

from dhpo_suite.train.objectives import get_objective
from tests.objectives.batches import make_batch

# verl divides by (n + 1e-8) where we divide by n: agreement is to ~1e-8 relative, hence rtol 1e-7.
# (verl name, our name, our hparams, clip_ratio_low, clip_ratio_high, agg modes verl honours)
PAIRS = [
    ("vanilla", "grpo", {"dual_clip": 3.0}, 0.2, 0.2,
     ["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]),
    ("vanilla", "grpo", {"dual_clip": 3.0}, 0.2, 0.28, ["token-mean"]),
    ("gspo", "gspo", {}, 3e-4, 4e-4, ["seq-mean-token-mean", "token-mean"]),
    ("geo_mean", "gmpo", {}, 0.4, 0.4, ["seq-mean-token-mean"]),
    ("cispo", "cispo", {}, 10.0, 0.2, ["seq-mean-token-mean", "token-mean"]),  # Appendix D: no lower bound
    ("cispo", "cispo", {}, 1.0, 0.28, ["token-mean", "seq-mean-token-mean"]),
    ("cispo", "cispo", {}, 0.2, 0.28, ["token-mean"]),
    ("sapo", "sapo", {}, 0.2, 0.2, ["seq-mean-token-mean"]),
]


def verl_loss(verl_name, lp, old, adv, mask, agg, low, high, global_info):
    cfg = FSDPActorConfig(rollout_n=1, ppo_micro_batch_size_per_gpu=1, clip_ratio_low=low, clip_ratio_high=high)
    cfg.global_batch_info.update(global_info)
    loss, _ = get_policy_loss_fn(verl_name)(old, lp, adv[:, None].expand_as(lp), mask.to(lp.dtype), agg, cfg)
    return loss


@pytest.mark.parametrize("verl_name,ours,hp,low,high,modes", PAIRS)
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_verl(verl_name, ours, hp, low, high, modes, seed):
    # spread 0.5 pushes many tokens outside every trust region; small spread for GSPO's tiny ε.
    spread = 0.0003 if ours == "gspo" else 0.5
    lp, old, adv, mask, _ = make_batch(B=8, T=11, seed=seed, spread=spread, empty_row=False)
    for agg in modes:
        info = {"dp_size": 1, "batch_num_tokens": mask.sum(), "global_batch_size": mask.shape[0]}
        a = lp.detach().clone().requires_grad_(True)
        ref = verl_loss(verl_name, a, old, adv, mask, agg, low, high, info)
        (g_ref,) = torch.autograd.grad(ref, a)
        b = lp.detach().clone().requires_grad_(True)
        obj = (get_objective(ours, eps_low=low, eps_high=high, loss_agg_mode=agg, **hp) if ours != "sapo"
               else get_objective(ours, loss_agg_mode=agg))
        out = obj(b, old, adv, mask, batch_num_tokens=mask.sum(), global_batch_size=mask.shape[0])
        (g,) = torch.autograd.grad(out.loss, b)
        torch.testing.assert_close(out.loss, ref, rtol=1e-7, atol=1e-12, msg=f"{ours} vs {verl_name} loss, {agg}")
        torch.testing.assert_close(g, g_ref, rtol=1e-7, atol=1e-12, msg=f"{ours} vs {verl_name} grad, {agg}")


def test_grpo_without_dual_clip_differs_from_vanilla_only_where_documented():
    """Paper GRPO has no dual clip; verl's vanilla caps A<0 losses at 3·|A|. Only those tokens differ."""
    lp, old, adv, mask, _ = make_batch(B=8, T=11, spread=1.5, empty_row=False)
    a = get_objective("grpo")(lp, old, adv, mask)
    b = get_objective("grpo", dual_clip=3.0)(lp, old, adv, mask)
    differs = (a.loss_mat != b.loss_mat) & mask
    assert differs.any()
    ratio = a.branches["token"].ratio
    assert ((adv[:, None].expand_as(ratio) < 0) & (ratio > 3.0))[differs].all()
