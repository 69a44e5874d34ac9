"""verl as verl users run it: `python -m verl.trainer.main_ppo ... policy_loss.loss_mode=dhpo_suite.<name>`, with no
launcher of ours. The config is composed by verl's own Hydra tree and checked by verl's own `validate_config`
(which `main_ppo` calls before Ray starts; the plugin's start-up check runs inside it). One such launch runs to
the end on CPU (`plain_run`: Ray, verl's v1 trainer, the FSDP2 actor with the plugin's loss, the grader's reward,
the run directory the driver opens and verl's `Tracking.finish` closes).

Expected values are typed from the paper's Appendix D and eqs. 3/6/7 (see test_presets.py), never verl's YAML
defaults (clip_ratio_low/high 0.2, loss_agg_mode token-mean), which these launches used to train with silently.
"""

from __future__ import annotations

import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dhpo_suite.train.objectives import OBJECTIVES
from dhpo_suite.train.verl_backend.hparams import objective_hparams
from tests.verl.launches import SMALL, assert_rewards_are_the_graders, run_to_end
from tests.verl.test_presets import APPENDIX_D, DHPO_SEQUENCE_BRANCH, EQS_3_6_7_AGGREGATION

SAPO_TAUS = (1.0, 1.05)  # SAPO's paper (τ_pos, τ_neg); verl's YAML has the same


@pytest.fixture(scope="module")
def parquet(tmp_path_factory) -> Path:
    """A training file with enough rows for verl's default batch (1024 prompts); only its row count is read."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path_factory.mktemp("plain-verl") / "train.parquet"
    pq.write_table(pa.table({"prompt": ["What is 1 + 1?"] * 1024, "answer": ["2"] * 1024}), path)
    return path


# What every verl example script sets besides the loss (verl's examples/grpo_trainer/*.sh): GRPO advantages,
# micro-batch sizes (verl's validation requires them), no KL loss, 5 responses per prompt.
VERL_USER = ["algorithm.adv_estimator=grpo", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
             "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16", "actor_rollout_ref.actor.use_kl_loss=false",
             "algorithm.use_kl_in_reward=false"]
GROUP = "actor_rollout_ref.rollout.n=5"


def _inputs(model: Path, data: Path, group: tuple[str, ...] = (GROUP,)) -> list[str]:
    return [*VERL_USER, *group, f"actor_rollout_ref.model.path={model}", f"data.train_files={data}",
            f"data.val_files={data}"]


def _main_config(overrides: list[str]):
    """What `python -m verl.trainer.main_ppo <overrides>` holds when it calls validate_config: verl's ppo_trainer
    composed by Hydra, with the command line known to Hydra (as under @hydra.main)."""
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import open_dict

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=overrides, return_hydra_config=True)
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def _verl_validate(cfg) -> None:
    """verl's main: `validate_config(config, use_reference_policy=..., use_critic=...)` (plugin check inside)."""
    from hydra.core.hydra_config import HydraConfig
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    try:
        validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    finally:
        HydraConfig.instance().cfg = None  # type: ignore[assignment]


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_loss_mode_alone_trains_the_papers_settings(name, tiny_model_dir, parquet, capsys):
    from verl.utils.config import omega_conf_to_dataclass

    cfg = _main_config([f"actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.{name}",
                        *_inputs(tiny_model_dir, parquet)])
    _verl_validate(cfg)
    table = capsys.readouterr().out
    actor = cfg.actor_rollout_ref.actor
    # verl's config (which verl prints and its workers read) now shows what the loss uses.
    if name in APPENDIX_D:
        assert (actor.clip_ratio_low, actor.clip_ratio_high) == APPENDIX_D[name]
    if name == "sapo":
        assert (actor.tau_pos, actor.tau_neg) == SAPO_TAUS
    assert actor.loss_agg_mode == EQS_3_6_7_AGGREGATION
    assert actor.calculate_entropy  # every objective logs entropy/* (the paper's Fig. 1b needs GRPO's)
    # A worker's view: verl's own dataclasses, then the loss's resolution.
    hp = objective_hparams(name, omega_conf_to_dataclass(actor))
    if name in APPENDIX_D:
        assert (hp["eps_low"], hp["eps_high"]) == APPENDIX_D[name]
    if name.startswith("dhpo"):
        assert (hp["seq_eps_low"], hp["seq_eps_high"]) == DHPO_SEQUENCE_BRANCH and hp["clip"] == "branch"
    assert hp["loss_agg_mode"] == EQS_3_6_7_AGGREGATION
    # The table is printed once, with where each value came from.
    assert table.count(f"dhpo_suite.{name}: the loss's settings") == 1
    assert "paper default (verl's YAML: token-mean)" in table


def test_verls_gae_default_becomes_group_advantages_and_the_run_is_recorded(tiny_model_dir, parquet, tmp_path,
                                                                            capsys):
    """A plain launch that leaves verl's `algorithm.adv_estimator` at its YAML default (gae: PPO with a critic)
    gets the paper's grpo (eq. 1), as it gets the paper's clip ranges, and the table says where it came from;
    telemetry's response budget is data.max_response_length; the manifest the driver writes records verl's
    seed (the rollout's 42, verl's YAML; data.seed is null), the training files and the resolved config."""
    from verl.trainer.ppo.utils import need_critic

    from dhpo_suite.runs import read_manifest

    overrides = [o for o in _inputs(tiny_model_dir, parquet) if not o.startswith("algorithm.adv_estimator")]
    cfg = _main_config(["actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.dhpo-e",
                        "data.max_response_length=700",
                        f"+actor_rollout_ref.actor.policy_loss.run_dir={tmp_path / 'run'}", *overrides])
    assert cfg.algorithm.adv_estimator == "gae" and need_critic(cfg)  # verl's own default, before the check
    _verl_validate(cfg)
    table = capsys.readouterr().out
    assert cfg.algorithm.adv_estimator == "grpo" and not need_critic(cfg)
    assert "adv_estimator       grpo                   paper default (verl's YAML: gae)" in table
    assert "rollout.n           5                      actor_rollout_ref.rollout.n" in table
    assert cfg.actor_rollout_ref.actor.policy_loss.telemetry.max_response_length == 700
    m = read_manifest(tmp_path / "run")
    assert (m.algorithm, m.backend, m.status, m.seed) == ("dhpo-e", "verl", "running", 42)
    assert m.task == str(parquet) and m.config["algorithm"]["adv_estimator"] == "grpo"
    assert m.hparams["group_size"] == 5 and m.telemetry["max_response_length"] == 700


def test_a_group_of_one_is_refused_whoever_set_it(tiny_model_dir, parquet):
    """verl's YAML rollout.n=1: every group-normalised advantage is 0. Raising it multiplies the rollouts, so it
    is refused (one line naming the key), not raised silently."""
    from dhpo_suite.train.verl_backend.startup import StartupError, check

    cfg = _main_config(["actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.grpo",
                        *_inputs(tiny_model_dir, parquet, group=())])
    from hydra.core.hydra_config import HydraConfig

    HydraConfig.instance().cfg = None  # type: ignore[assignment]
    with pytest.raises(StartupError, match=r"^actor_rollout_ref.rollout.n=1: algorithm.adv_estimator=grpo "):
        check(cfg, frozenset(), inputs=False)


def test_a_value_the_user_wrote_is_kept_even_when_it_is_verls_default(tiny_model_dir, parquet, capsys):
    """clip_ratio_high=0.2 on the command line is the user's choice (DHPO without clip-higher), not verl's default."""
    cfg = _main_config(["actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.dhpo-e",
                        "actor_rollout_ref.actor.clip_ratio_high=0.2", *_inputs(tiny_model_dir, parquet)])
    _verl_validate(cfg)
    assert cfg.actor_rollout_ref.actor.clip_ratio_high == 0.2
    assert "actor.clip_ratio_high" in capsys.readouterr().out


def test_an_unchecked_config_with_verls_defaults_is_refused_by_the_worker():
    """A config that reached a worker without the start-up check (a program calling verl's trainer itself):
    verl's 0.2/0.2 token-mean are refused there, naming the key, instead of trained."""
    from verl.utils.config import omega_conf_to_dataclass

    from dhpo_suite.train.verl_backend.overrides import compose

    cfg = compose(["actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.dhpo-e", *VERL_USER])
    with pytest.raises(ValueError, match=r"actor.clip_ratio_high=0.2 is verl's YAML default, not dhpo_suite.dhpo-e's "
                                         r"eps_high=0.28 \(paper, Appendix D\)"):
        objective_hparams("dhpo-e", omega_conf_to_dataclass(cfg.actor_rollout_ref.actor))


def _main_ppo(overrides: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess, float]:
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides,
                           f"hydra.run.dir={cwd / 'hydra'}"], capture_output=True, text=True, timeout=600, cwd=cwd)
    return proc, time.monotonic() - start


@pytest.mark.slow
@pytest.mark.parametrize("extra, needle", [
    (["actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.dhpo-e",
      "actor_rollout_ref.actor.calculate_entropy=false"],
     "error: actor_rollout_ref.actor.calculate_entropy=false: dhpo_suite.dhpo-e mixes by the token entropy"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.grpo", "actor_rollout_ref.model.path=/no/such/model"],
     "error: actor_rollout_ref.model.path=/no/such/model: no such model directory"),
    (["actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.grpo", "algorithm.adv_estimator=bogus"],
     "error: algorithm.adv_estimator=bogus: dhpo_suite objectives take group-normalised advantages"),
])
def test_plain_main_ppo_stops_before_ray_with_one_line(extra, needle, tiny_model_dir, parquet, tmp_path):
    """The real `python -m verl.trainer.main_ppo`: the refusal is one line, exit 2, before `ray.init` (which
    verl announces as "ray init kwargs") — so before any rollout, model load or worker start."""
    ours = {o.split("=")[0] for o in extra}
    proc, seconds = _main_ppo([*[o for o in _inputs(tiny_model_dir, parquet) if o.split("=")[0] not in ours], *extra],
                              tmp_path)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert needle in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "ray init kwargs" not in proc.stdout
    assert "Traceback" not in proc.stderr
    print(f"refused after {seconds:.1f} s (imports and composition only)")


def test_configs_without_our_loss_are_left_alone():
    """verl's validate_config also serves verl's own losses and other entry points: the check stays out."""
    from omegaconf import OmegaConf

    from dhpo_suite.train.verl_backend.startup import check

    vanilla = OmegaConf.create({"actor_rollout_ref": {"actor": {"policy_loss": {"loss_mode": "vanilla"},
                                                               "clip_ratio_high": 0.2}}})
    assert check(vanilla, None) is None and check(OmegaConf.create({"data": {}}), None) is None
    assert vanilla.actor_rollout_ref.actor.clip_ratio_high == 0.2  # untouched


# The real thing, to the end: what a verl user writes (docs/verl.md: the loss name, rollout.n, data, model, the
# reward function, the run directory; verl's own step, warm-up and logger keys) plus what a CPU user adds
# (VERL_PLATFORM=cpu and cpu_platform's overrides) at the launcher test's SMALL sizes. Nothing of our launcher:
# verl's YAML leaves clip ranges, aggregation, adv_estimator (gae) and calculate_entropy (false) to the plugin.
# GRPO, a baseline, with trainer.critic_warmup=2: verl's first actor update is its global step 2.
PLAIN_STEPS = 3


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory, tiny_model_dir, data_dir) -> tuple[Path, str]:
    from dhpo_suite.train.verl_backend import cpu_platform

    root = tmp_path_factory.mktemp("plain-launch")
    run_dir = root / "grpo"
    command = [sys.executable, "-m", "verl.trainer.main_ppo",
               "actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.grpo",
               f"+actor_rollout_ref.actor.policy_loss.run_dir={run_dir}",
               f"data.train_files={data_dir / 'train.parquet'}", f"data.val_files={data_dir / 'val.parquet'}",
               f"actor_rollout_ref.model.path={tiny_model_dir}",
               "reward.custom_reward_function.path=pkg://dhpo_suite.train.verl_backend.reward",
               "reward.custom_reward_function.name=compute_score",
               f"trainer.total_training_steps={PLAIN_STEPS}", "trainer.critic_warmup=2",
               "trainer.val_before_train=false", "trainer.logger=[console]",
               *cpu_platform.hydra_overrides(), *SMALL]
    log = root / "main_ppo.log"
    code = run_to_end(command, log, cwd=root)
    assert code == 0, log.read_text()[-6000:]
    return run_dir, log.read_text()


@pytest.mark.slow
def test_plain_main_ppo_trains_to_the_end_and_closes_its_run(plain_run):
    """The manifest the driver wrote is closed `completed` when verl's fit returns (Tracking.finish ->
    run_manifest.close_plain); every actor update has its telemetry row, numbered by verl's global step."""
    from dhpo_suite.runs import RunReader

    reader = RunReader(plain_run[0])
    m = reader.manifest
    assert (m.status, m.backend, m.algorithm) == ("completed", "verl", "grpo")
    assert reader.steps() == [2, 3]  # critic_warmup=2: step 1 rolls out without an update (counting would say 1, 2)
    for _, row in reader.scalars().iterrows():
        assert row["responses/count"] == 4 and row["groups/count"] == 2  # 2 prompts x 2 responses
        assert math.isfinite(row["reward/mean"]) and 0 <= row["reward/mean"] <= 1
        assert math.isfinite(row["ratio/token/mean"]) and 0 <= row["clip/token/binding"] <= 1
        # A baseline logs the entropy too (verl's YAML has calculate_entropy=false): the paper's Fig. 1b.
        assert math.isfinite(row["entropy/mean"]) and row["entropy/mean"] > 0


@pytest.mark.slow
def test_plain_main_ppo_rewards_are_the_graders_verdicts(plain_run, tiny_model_dir):
    assert_rewards_are_the_graders(plain_run[0], tiny_model_dir, [2, 3])


@pytest.mark.slow
def test_plain_main_ppo_prints_the_papers_settings_once(plain_run):
    log = plain_run[1]
    assert log.count("dhpo_suite.grpo: the loss's settings") == 1  # by verl's driver, before Ray
    assert log.index("the loss's settings") < log.index("ray init kwargs")
    table = dict(_table_rows(log))
    assert (table["eps_low"], table["eps_high"]) == (f"{APPENDIX_D['grpo'][0]} paper default",
                                                     f"{APPENDIX_D['grpo'][1]} paper default")
    assert table["loss_agg_mode"] == f"{EQS_3_6_7_AGGREGATION} paper default (verl's YAML: token-mean)"
    assert table["adv_estimator"] == "grpo paper default (verl's YAML: gae)"  # eq. 1, not verl's PPO critic
    assert table["rollout.n"] == "2 actor_rollout_ref.rollout.n"


def _table_rows(log: str):
    """(setting, "value source") of the settings table verl's driver printed."""
    start = log.index("the loss's settings")
    for line in log[start:].splitlines()[1:]:
        if not line.startswith("  "):
            if line.startswith("verl's algorithm around it"):
                continue
            return
        key, rest = line.strip().split(maxsplit=1)
        yield key, " ".join(rest.split())
