"""The one adapter: verl's real `ppo_loss` (wrapped by the plugin) calling our loss equals the library call."""

from __future__ import annotations

import pytest
import torch

import verl  # noqa: F401  (loads the plugin)
from verl.utils import tensordict_utils as tu
from verl.utils.config import omega_conf_to_dataclass
from verl.workers.utils import losses
from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding

from dhpo_suite.train.objectives import get_objective
from dhpo_suite.testing.verl_worker import LocalCase, _rollout
from dhpo_suite.train.verl_backend import seam
from dhpo_suite.train.verl_backend.state import STATE
from dhpo_suite.train.verl_backend.overrides import algorithm_overrides, compose
from dhpo_suite.train.verl_backend.policy_loss import make_policy_loss
from dhpo_suite.train.verl_backend.presets import algorithm_settings


def _actor(objective: str, extra=()):
    cfg = compose(algorithm_overrides(algorithm_settings(objective), None) + [
        "actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.actor.use_dynamic_bsz=true", *extra])
    return omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)


def _micro_batch(seed: int = 0):
    """A verl no-padding micro-batch with model outputs (log-probs, entropy) as the engine returns them."""
    batch, rewards, _ = _rollout(LocalCase("unused", ("grpo",), prompts=3, group_size=2, seed=seed), 1, vocab=60)
    g = torch.Generator().manual_seed(seed)
    mask = batch.batch["response_mask"].float()
    batch.batch["old_log_probs"] = -torch.rand(mask.shape, generator=g) * mask
    batch.batch["advantages"] = torch.randn(mask.shape[0], 1, generator=g) * mask
    td = left_right_2_no_padding(batch.to_tensordict())
    tu.assign_non_tensor(td, dp_size=1, batch_num_tokens=int(mask.sum()), global_batch_size=mask.shape[0])
    offsets = td["input_ids"].offsets()
    nested = lambda v: torch.nested.nested_tensor_from_jagged(v, offsets=offsets)  # noqa: E731
    total = int(offsets[-1])
    out = {"log_probs": nested(-torch.rand(total, generator=g) * 3),
           "entropy": nested(torch.rand(total, generator=g) * 4)}
    return td, out


@pytest.mark.parametrize("objective", ["dhpo-e", "dhpo", "gspo", "grpo", "sapo"])
def test_ppo_loss_equals_the_library_call(objective):
    actor = _actor(objective)
    td, out = _micro_batch()
    loss, metrics = losses.ppo_loss(actor, out, td)  # verl's function, wrapped at import by the plugin
    lp, ent = no_padding_2_padding(out["log_probs"], td), no_padding_2_padding(out["entropy"], td)
    padded = td.select("old_log_probs", "advantages", "response_mask").to_padded_tensor()
    hp = dict(get_objective(objective).hparams)
    expect = get_objective(objective, **hp)(
        lp, padded["old_log_probs"], padded["advantages"], padded["response_mask"].bool(),
        ent if actor.calculate_entropy else None,
        dp_size=1, batch_num_tokens=td["batch_num_tokens"], global_batch_size=td["global_batch_size"])
    # verl subtracts entropy_coeff (0 in our presets) x entropy: the loss is ours alone.
    assert actor.entropy_coeff == 0
    torch.testing.assert_close(loss, expect.loss, rtol=0, atol=0)
    assert {"actor/pg_loss", "actor/pg_clipfrac", "actor/ppo_kl"} <= set(metrics)


def test_knobs_from_verl_config_reach_the_objective():
    actor = _actor("dhpo", ["++actor_rollout_ref.actor.policy_loss.hparams.clip=unified",
                            "actor_rollout_ref.actor.clip_ratio_high=0.3"])
    td, out = _micro_batch(1)
    loss, _ = losses.ppo_loss(actor, out, td)
    lp, ent = no_padding_2_padding(out["log_probs"], td), no_padding_2_padding(out["entropy"], td)
    padded = td.select("old_log_probs", "advantages", "response_mask").to_padded_tensor()
    expect = get_objective("dhpo", clip="unified", eps_high=0.3)(
        lp, padded["old_log_probs"], padded["advantages"], padded["response_mask"].bool(), ent,
        batch_num_tokens=td["batch_num_tokens"], global_batch_size=td["global_batch_size"])
    torch.testing.assert_close(loss, expect.loss, rtol=0, atol=0)


def test_entropy_from_another_micro_batch_is_refused():
    actor = _actor("dhpo-e")
    td, out = _micro_batch(2)
    other_td, other_out = _micro_batch(3)
    lp = no_padding_2_padding(other_out["log_probs"], other_td)
    padded = other_td.select("old_log_probs", "advantages", "response_mask").to_padded_tensor()
    token = STATE.micro_batch.set(seam.MicroBatch(out, td))  # the stash holds micro-batch 2
    try:
        with pytest.raises(RuntimeError, match="another micro-batch"):
            make_policy_loss("dhpo-e")(padded["old_log_probs"], lp, padded["advantages"],
                                        padded["response_mask"].bool(), actor.loss_agg_mode, actor)
    finally:
        STATE.micro_batch.reset(token)


def test_missing_entropy_says_which_setting():
    actor = _actor("dhpo-e")
    td, out = _micro_batch(4)
    with pytest.raises(RuntimeError, match="calculate_entropy=true"):
        losses.ppo_loss(actor, {"log_probs": out["log_probs"]}, td)
