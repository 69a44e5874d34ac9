"""Presets x algorithms -> verl configs that verl's own config classes accept (nothing launched)."""

from __future__ import annotations

import pytest

from dhpo_suite.train.objectives import OBJECTIVES
from dhpo_suite.train.verl_backend.launch import plan
from dhpo_suite.train.verl_backend.presets import PRESETS, algorithm_settings

# The paper's per-algorithm loss settings (Appendix D), written out by hand: (ε_low, ε_high, aggregation).
PAPER = {
    "grpo": (0.2, 0.2, "token-mean"),
    "gspo": (3e-4, 4e-4, "seq-mean-token-mean"),
    "gmpo": (0.4, 0.4, "seq-mean-token-mean"),
    "cispo": (1.0, 0.28, "token-mean"),
    "dhpo": (0.2, 0.28, "token-mean"),
    "dhpo-a": (0.2, 0.28, "token-mean"),
    "dhpo-e": (0.2, 0.28, "token-mean"),
}
# Appendix D per model: (mini-batch, micro-batch per GPU).
BATCHES = {"qwen3-1.7b": (256, 16), "qwen3-4b": (256, 16), "qwen3-30b-a3b": (32, 32)}


def test_every_objective_has_settings():
    assert set(PAPER) | {"sapo"} == set(OBJECTIVES)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_every_algorithm_composes_and_verl_accepts_it(preset, tmp_path):
    for algo in OBJECTIVES:
        pl = plan(algo, preset, out=tmp_path / algo)
        actor = pl.config.actor_rollout_ref.actor
        from verl.utils.config import omega_conf_to_dataclass

        dc = omega_conf_to_dataclass(actor)  # verl's FSDPActorConfig with our DHPOPolicyLossConfig
        assert type(dc).__name__ == "FSDPActorConfig" and type(dc.policy_loss).__name__ == "DHPOPolicyLossConfig"
        assert dc.policy_loss.loss_mode == f"dhpo_suite.{algo}"
        assert dc.policy_loss.run_dir == str(tmp_path / algo)
        if algo in PAPER:
            low, high, agg = PAPER[algo]
            assert (dc.clip_ratio_low, dc.clip_ratio_high, dc.loss_agg_mode) == (low, high, agg), algo
        assert dc.calculate_entropy == (algo in ("dhpo", "dhpo-e"))
        if algo.startswith("dhpo"):
            pl_cfg = dc.policy_loss
            assert (pl_cfg.seq_clip_ratio_low, pl_cfg.seq_clip_ratio_high, pl_cfg.clip) == (0.2, 0.28, "branch")
        # Appendix D protocol, the same for every algorithm.
        assert (dc.optim.lr, dc.optim.lr_warmup_steps, dc.optim.weight_decay) == (1e-6, 10, 0.1)
        assert (dc.ppo_mini_batch_size, dc.ppo_micro_batch_size_per_gpu) == BATCHES[preset]
        assert dc.use_dynamic_bsz and not dc.use_kl_loss and dc.entropy_coeff == 0
        assert not dc.fsdp_config.param_offload and not dc.fsdp_config.optimizer_offload
        cfg = pl.config
        assert cfg.data.train_batch_size == 512 and cfg.actor_rollout_ref.rollout.n == 16
        assert (cfg.data.max_prompt_length, cfg.data.max_response_length) == (1024, 4096)
        r = cfg.actor_rollout_ref.rollout
        assert (r.temperature, r.top_p, r.top_k) == (1.0, 1.0, -1)
        m = cfg.actor_rollout_ref.model
        assert m.enable_gradient_checkpointing and m.use_remove_padding and m.use_fused_kernels
        assert not cfg.algorithm.use_kl_in_reward
        assert cfg.reward.custom_reward_function.path == "pkg://dhpo_suite.train.verl_backend.reward"
        assert pl.command[1:3] == ["-m", "verl.trainer.main_ppo"]


def test_sapo_uses_verl_tau_fields():
    s = algorithm_settings("sapo")
    assert s.clip_ratio_low is None and s.tau == (1.0, 1.05)


def test_user_overrides_win_and_reach_the_loss(tmp_path):
    pl = plan("dhpo", "qwen3-4b", ["+actor_rollout_ref.actor.policy_loss.clip=unified",
                                   "actor_rollout_ref.actor.clip_ratio_high=0.3"], out=tmp_path)
    from verl.utils.config import omega_conf_to_dataclass

    from dhpo_suite.train.verl_backend.policy_loss import objective_hparams

    actor = omega_conf_to_dataclass(pl.config.actor_rollout_ref.actor)
    hp = objective_hparams("dhpo", actor, actor.loss_agg_mode)
    assert hp["clip"] == "unified" and hp["eps_high"] == 0.3 and hp["seq_eps_high"] == 0.28
