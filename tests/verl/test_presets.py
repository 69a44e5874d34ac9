"""Presets x algorithms -> verl configs that verl's own config classes accept (nothing launched)."""

from __future__ import annotations

import pytest
import torch

from dhpo_suite.train.objectives import OBJECTIVES
from dhpo_suite.train.verl_backend.launch import plan
from dhpo_suite.train.verl_backend.hparams import objective_hparams
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


def test_every_objective_of_appendix_d_is_registered():
    # Not a pinned list of all objectives: one added outside the paper (docs/extending.md) needs no entry here.
    assert set(APPENDIX_D) <= set(OBJECTIVES)


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
        assert dc.calculate_entropy  # every objective: entropy/* telemetry (Fig. 1b), DHPO-E's weight
        hp = objective_hparams(algo, dc)  # what the loss will use
        if algo in APPENDIX_D:
            assert (hp["eps_low"], hp["eps_high"]) == APPENDIX_D[algo], algo
        if algo.startswith("dhpo"):
            assert (hp["seq_eps_low"], hp["seq_eps_high"]) == DHPO_SEQUENCE_BRANCH
            assert hp["clip"] == "branch"  # eq. 11
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


def test_sapo_uses_verl_tau_fields(tmp_path):
    s = algorithm_settings("sapo")
    assert dict(s.hparams)["tau_pos"] == 1.0 and dict(s.hparams)["tau_neg"] == 1.05
    actor = plan("sapo", "qwen3-4b", out=tmp_path).config.actor_rollout_ref.actor
    assert (actor.tau_pos, actor.tau_neg) == (1.0, 1.05)


def test_user_overrides_win_and_reach_the_loss(tmp_path):
    """verl's own names (clip_ratio_high) and the objective's keywords (policy_loss.hparams) reach the loss."""
    from verl.utils.config import omega_conf_to_dataclass

    pl = plan("dhpo", "qwen3-4b", ["+actor_rollout_ref.actor.policy_loss.hparams.clip=unified",
                                   "actor_rollout_ref.actor.clip_ratio_high=0.3",
                                   "+actor_rollout_ref.actor.policy_loss.hparams.seq_eps_low=0.1"], out=tmp_path)
    actor = omega_conf_to_dataclass(pl.config.actor_rollout_ref.actor)
    hp = objective_hparams("dhpo", actor)
    assert hp["clip"] == "unified" and hp["eps_high"] == 0.3 and hp["seq_eps_high"] == 0.28
    assert hp["seq_eps_low"] == 0.1 and hp["eps_low"] == 0.2
    assert pl.resolution.hparams == hp  # what the launcher printed and wrote into the manifest
    assert pl.resolution.source["eps_high"] == "actor.clip_ratio_high"


@pytest.mark.parametrize("algo, override, expect", [
    ("grpo", "+actor_rollout_ref.actor.policy_loss.hparams.mixing=avg",
     "actor.policy_loss.hparams.mixing: objective 'grpo' has no hyper-parameter 'mixing'; it takes: eps_low, "
     "eps_high, dual_clip, loss_agg_mode"),
    ("grpo", "+actor_rollout_ref.actor.policy_loss.hparams.dual_clip=abc",
     "actor.policy_loss.hparams.dual_clip: objective 'grpo': dual_clip='abc' must be a number"),
    ("grpo", "actor_rollout_ref.actor.clip_ratio_low=1.5", "actor.clip_ratio_low: objective 'grpo': eps_low=1.5 must"),
    ("sapo", "actor_rollout_ref.actor.tau_neg=0", "actor.tau_neg: objective 'sapo': tau_neg=0 must be > 0"),
    ("dhpo-e", "+actor_rollout_ref.actor.policy_loss.hparams.mixing=avg", "contradicts the name"),
    # One name per setting: verl's own field, not a second spelling under hparams.
    ("grpo", "+actor_rollout_ref.actor.policy_loss.hparams.eps_low=0.1",
     "actor.policy_loss.hparams.eps_low: on verl this setting is verl's own field; set "
     "actor_rollout_ref.actor.clip_ratio_low instead"),
    # verl's dual-clip constant is not our GRPO's (the paper's GRPO has none): refused, not ignored.
    ("grpo", "actor_rollout_ref.actor.clip_ratio_c=2.0",
     "actor.clip_ratio_c=2.0: verl's dual-clip constant is not read by dhpo_suite.grpo (its dual clip: "
     "+actor_rollout_ref.actor.policy_loss.hparams.dual_clip)"),
    ("dhpo-e", "actor_rollout_ref.actor.calculate_entropy=false", "calculate_entropy=false: dhpo_suite.dhpo-e mixes"),
    ("grpo", "algorithm.rollout_correction.rollout_is=token", "rollout_correction.rollout_is=token: dhpo_suite"),
    # Settings of verl's algorithm around the loss (issue 42): group advantages over groups of >= 2, no
    # rejection sampling (it rewrites the response mask), no bypass mode (old log-probs from vLLM).
    ("dhpo-e", "algorithm.adv_estimator=bogus", "algorithm.adv_estimator=bogus: dhpo_suite objectives take "
     "group-normalised advantages (the paper's eq. 1): set algorithm.adv_estimator=grpo"),
    ("grpo", "algorithm.adv_estimator=gae", "algorithm.adv_estimator=gae: dhpo_suite objectives take"),
    ("dhpo-e", "actor_rollout_ref.rollout.n=1", "actor_rollout_ref.rollout.n=1: algorithm.adv_estimator=grpo "
     "normalises each response's reward within its prompt's group"),
    ("grpo", "algorithm.rollout_correction.rollout_rs=token_k1", "algorithm.rollout_correction.rollout_rs=token_k1: "
     "rejection sampling rewrites the response mask"),
    ("grpo", "algorithm.rollout_correction.bypass_mode=true", "algorithm.rollout_correction.bypass_mode=true: old "
     "log-probs would be the rollout engine's"),
    ("grpo", "actor_rollout_ref.rollout.max_model_len=2048", "max_model_len=2048 < data.max_prompt_length + "),
    ("grpo", "actor_rollout_ref.actor.clip_ratio_hi=0.3", "verl override actor_rollout_ref.actor.clip_ratio_hi: no "
     "such key in verl's config (did you mean actor_rollout_ref.actor.clip_ratio_high?)"),
])
def test_bad_setting_stops_the_launch_with_one_line_naming_the_key(tmp_path, algo, override, expect):
    from dhpo_suite.train.verl_backend.launch import LaunchError

    with pytest.raises(LaunchError) as err:
        plan(algo, "qwen3-4b", [override], out=tmp_path)
    assert expect in str(err.value) and "\n" not in str(err.value)


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


@pytest.mark.parametrize("extra, expect", [
    (["+actor_rollout_ref.actor.policy_loss.hparams.clip=unified",
      "+actor_rollout_ref.actor.policy_loss.hparams.seq_eps_high=0.5"], {"clip": "unified", "seq_eps_high": 0.5}),
    (["actor_rollout_ref.actor.clip_ratio_high=0.3"], {"eps_high": 0.3}),  # verl's own field
])
def test_verls_real_loss_call_uses_the_hparams(extra, expect):
    """verl's own `ppo_loss` (wrapped by the plugin) on a real micro-batch equals the library call with the same
    keywords: the path a verl run takes."""
    from tests.verl.test_adapter import _actor, _micro_batch
    from verl.workers.utils import losses
    from verl.workers.utils.padding import no_padding_2_padding

    from dhpo_suite.train.objectives import get_objective

    actor = _actor("dhpo", extra)
    td, out = _micro_batch(1)
    loss, _ = losses.ppo_loss(actor, out, td)
    lp, ent = no_padding_2_padding(out["log_probs"], td), no_padding_2_padding(out["entropy"], td)
    padded = td.select("old_log_probs", "advantages", "response_mask").to_padded_tensor()
    expect_out = get_objective("dhpo", **expect)(
        lp, padded["old_log_probs"], padded["advantages"], padded["response_mask"].bool(), ent,
        batch_num_tokens=td["batch_num_tokens"], global_batch_size=td["global_batch_size"])
    torch.testing.assert_close(loss, expect_out.loss, rtol=0, atol=0)
    default = get_objective("dhpo")(lp, padded["old_log_probs"], padded["advantages"],
                                    padded["response_mask"].bool(), ent, batch_num_tokens=td["batch_num_tokens"],
                                    global_batch_size=td["global_batch_size"])
    assert not torch.equal(default.loss, expect_out.loss)  # the settings changed the loss


def test_lengths_and_budgets_follow_the_users_overrides(tmp_path):
    """`data.max_response_length=16384` (the paper's evaluation budget) reaches vLLM's context and the token
    budgets; before, they were derived from the preset's 4096 and vLLM clamped generation silently."""
    cfg = plan("grpo", "qwen3-1.7b", ["data.max_response_length=16384"], out=tmp_path).config
    rollout, actor = cfg.actor_rollout_ref.rollout, cfg.actor_rollout_ref.actor
    assert rollout.max_model_len >= 1024 + 16384
    assert actor.ppo_max_token_len_per_gpu >= 1024 + 16384
    assert rollout.log_prob_max_token_len_per_gpu >= 1024 + 16384
    assert actor.policy_loss.telemetry.max_response_length == 16384  # truncated = reached vLLM's budget
