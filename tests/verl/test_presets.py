"""Presets x algorithms -> verl configs that verl's own config classes accept (nothing launched)."""

from __future__ import annotations

import pytest

from dhpo_suite.train.objectives import OBJECTIVES
from dhpo_suite.train.verl_backend.launch import plan
from dhpo_suite.train.verl_backend.presets import PRESETS, algorithm_settings

# The clip ranges as the paper's Appendix D states them, typed from it (not from the library's defaults):
# (ε_low, ε_high). CISPO's ε_low = 10 means no lower bound. DHPO: token branch 0.2/0.28 (DAPO's clip-higher)
# and sequence branch 0.2/0.28, as the developers' guide summarises Appendix D.
APPENDIX_D = {
    "grpo": (0.2, 0.2),
    "gspo": (3e-4, 4e-4),
    "gmpo": (0.4, 0.4),
    "cispo": (10.0, 0.2),
    "dhpo": (0.2, 0.28),
    "dhpo-a": (0.2, 0.28),
    "dhpo-e": (0.2, 0.28),
}
DHPO_SEQUENCE_BRANCH = (0.2, 0.28)
# Appendix D does not state an aggregation; it shares every setting but the clip ranges across methods. The
# paper's eqs. 3 (GRPO), 6 (GSPO) and 7 (DHPO) all write 1/G Σ_i 1/|o_i| Σ_t, i.e. verl's seq-mean-token-mean.
EQS_3_6_7_AGGREGATION = "seq-mean-token-mean"
# Appendix D per model: (mini-batch, micro-batch per GPU).
BATCHES = {"qwen3-1.7b": (256, 16), "qwen3-4b": (256, 16), "qwen3-30b-a3b": (32, 32)}


def test_every_objective_has_settings():
    assert set(APPENDIX_D) | {"sapo"} == set(OBJECTIVES)


def test_everything_but_the_clip_ranges_is_shared(tmp_path):
    """Appendix D: all remaining hyper-parameters are shared across methods. One aggregation for all."""
    actors = {algo: plan(algo, "qwen3-1.7b", out=tmp_path / algo).config.actor_rollout_ref.actor for algo in OBJECTIVES}
    modes = {algo: a.loss_agg_mode for algo, a in actors.items()}
    assert len(set(modes.values())) == 1, modes
    assert set(modes.values()) == {EQS_3_6_7_AGGREGATION}
    shared = ("ppo_epochs", "ppo_mini_batch_size", "entropy_coeff", "use_kl_loss", "use_dynamic_bsz")
    for key in shared:
        assert len({str(a[key]) for a in actors.values()}) == 1, key


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
        if algo in APPENDIX_D:
            assert (dc.clip_ratio_low, dc.clip_ratio_high) == APPENDIX_D[algo], algo
        assert dc.calculate_entropy == (algo in ("dhpo", "dhpo-e"))
        if algo.startswith("dhpo"):
            pl_cfg = dc.policy_loss
            assert (pl_cfg.seq_clip_ratio_low, pl_cfg.seq_clip_ratio_high) == DHPO_SEQUENCE_BRANCH
            assert pl_cfg.clip == "branch"  # eq. 11
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


# verl's loop (trainer_base.PPOTrainer.fit) ends at whichever comes first: total_training_steps, or the end of
# trainer.total_epochs epochs (len(train set) // train_batch_size steps each); it saves at the last step.
@pytest.mark.parametrize("steps, user, expect", [
    (7, [], (7, 7)),                                              # --steps N: N steps, epochs cannot end it first
    (None, ["trainer.total_training_steps=500"], (500, 500)),    # the docs' example of a step count
    (None, ["trainer.total_training_steps=500", "trainer.total_epochs=3"], (500, 3)),  # an explicit bound stays
    (None, [], (None, 1)),                                        # the preset: one epoch, its steps decide
])
def test_a_step_count_is_not_cut_short_by_epochs(tmp_path, steps, user, expect):
    cfg = plan("grpo", "qwen3-1.7b", user, out=tmp_path, steps=steps).config
    assert (cfg.trainer.total_training_steps, cfg.trainer.total_epochs) == expect
    assert cfg.trainer.save_freq > 0  # so verl's last step saves (and the plugin exports) a checkpoint


def test_truncation_budget_follows_the_rollouts_response_length(tmp_path):
    cfg = plan("grpo", "qwen3-1.7b", ["data.max_response_length=64"], out=tmp_path).config
    assert cfg.actor_rollout_ref.rollout.response_length == 64
    assert cfg.actor_rollout_ref.actor.policy_loss.telemetry.max_response_length == 64


def test_bad_step_count_is_one_error_line(capsys, tmp_path):
    from dhpo_suite.train.verl_backend.launch import run

    assert run("grpo", "qwen3-4b", out=tmp_path / "run", steps=0, dry_run=True) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --steps: must be > 0, got 0"]
