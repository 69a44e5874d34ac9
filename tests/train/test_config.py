"""Every bad option gives a clear error naming the field (API and CLI); bad model directories too."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from dhpo_suite.config_cli import field_docs
from dhpo_suite.models.local import ModelDirError, check_model_dir, load_model
from dhpo_suite.train.embedded.config import ConfigError, TrainConfig
from dhpo_suite.train.objectives import OBJECTIVES

BAD = [
    ("algo", "ppo"), ("task", "chess"), ("backend", "jax"), ("clip", "both"), ("eps_low", 1.5),
    ("eps_high", -0.1), ("seq_eps_low", 2.0), ("group_size", 1), ("prompts_per_step", 0), ("ppo_epochs", 0),
    ("mini_batches", 0), ("mini_batches", 1000), ("micro_batch", 0), ("lr", 0.0), ("lr", 5.0), ("warmup_steps", -1),
    ("steps", 0), ("temperature", 0.0), ("max_grad_norm", -1.0), ("weight_decay", -0.1), ("max_new_tokens", 0),
    ("sft_target", 1.5), ("threads", 0), ("checkpoint_every", 0), ("chunk_tokens", 0), ("group_size", 2.5),
    ("model", "/no/such/model/dir"), ("resume", True),
]


def test_every_field_has_a_docstring_and_a_valid_default():
    docs = field_docs(TrainConfig)
    assert {f.name for f in dataclasses.fields(TrainConfig)} == set(docs)
    assert all(docs.values())
    TrainConfig().validate()


@pytest.mark.parametrize("field,value", BAD)
def test_bad_values_name_the_field(field, value):
    with pytest.raises(ConfigError) as err:
        TrainConfig(**{field: value}).validate()
    assert err.value.field == field and str(err.value).startswith(f"{field}: ")


def test_cispo_takes_the_papers_eps_low_of_10():
    """Appendix D: CISPO ε_low = 10 (no lower bound); a trust-region objective still refuses ε_low > 1."""
    cfg = TrainConfig(algo="cispo", eps_low=10.0, eps_high=0.2).validate()
    assert cfg.objective_hparams() == {"eps_low": 10.0, "eps_high": 0.2}
    with pytest.raises(ConfigError, match="eps_low: objective 'grpo': eps_low=10.0 must be <= 1"):
        TrainConfig(algo="grpo", eps_low=10.0).validate()


def test_any_setting_of_the_objective_by_its_keyword():
    """--hp takes every keyword of the objective; the named flags are the same names."""
    cfg = TrainConfig(algo="grpo", eps_high=0.28, hparams={"dual_clip": 3.0}).validate()
    assert cfg.resolved_hparams() == {"eps_low": 0.2, "eps_high": 0.28, "dual_clip": 3.0,
                                      "loss_agg_mode": "seq-mean-token-mean"}
    with pytest.raises(ConfigError) as err:
        TrainConfig(algo="grpo", hparams={"mixing": "avg"}).validate()
    assert err.value.field == "hparams" and "it takes: eps_low, eps_high, dual_clip, loss_agg_mode" in str(err.value)
    with pytest.raises(ConfigError, match="eps_low given twice"):
        TrainConfig(algo="grpo", eps_low=0.1, hparams={"eps_low": 0.2}).validate()


def test_clip_only_for_dhpo():
    TrainConfig(algo="dhpo", clip="unified").validate()
    with pytest.raises(ConfigError, match="clip"):
        TrainConfig(algo="grpo", clip="unified").validate()


@pytest.mark.parametrize("algo", OBJECTIVES)
def test_every_objective_name_is_accepted(algo):
    TrainConfig(algo=algo).validate()


class _Result:
    def __init__(self, code: int, stderr: str):
        self.returncode, self.stderr = code, stderr


def _cli(*args):
    """Run `dhpo-suite train ARGS` in-process (typer's runner: no interpreter start per case)."""
    from typer.testing import CliRunner

    from dhpo_suite.cli import app

    res = CliRunner().invoke(app, ["train", *args])
    return _Result(res.exit_code, res.stderr + (repr(res.exception) if res.exit_code not in (0, 2) else ""))


def test_cli_entry_point_reports_bad_options():
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "train", "--steps", "0"], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 2 and "--steps: must be an integer >= 1" in out.stderr


@pytest.mark.parametrize("args,expect", [
    (["--group-size", "1"], "--group-size: must be an integer >= 2"),
    (["--algo", "ppo"], "--algo: 'ppo' is not one of"),
    (["--lr", "-1"], "--lr: must be > 0"),
    (["--bogus", "3"], "unknown option(s) for the embedded backend: --bogus 3"),
    (["--backend", "verl", "--group-size", "4"], "--group-size: embedded-backend option"),
    (["--resume"], "--resume: needs --out"),
    (["--algo", "grpo", "--hp", "mixing=avg"],
     "--hp: objective 'grpo' has no hyper-parameter 'mixing'; it takes: eps_low, eps_high, dual_clip, loss_agg_mode"),
    (["--algo", "grpo", "--hp", "eps_low=abc"], "--hp: objective 'grpo': eps_low='abc' must be a number"),
    (["--algo", "grpo", "--hp", "eps_low"], "--hp: 'eps_low' is not key=value"),
    (["--algo", "grpo", "--eps-low", "1.5"], "--eps-low: objective 'grpo': eps_low=1.5 must be <= 1"),
    (["--algo", "grpo", "--clip", "unified"], "--clip: objective 'grpo' has no hyper-parameter 'clip'"),
    (["--algo", "dhpo-e", "--hp", "mixing=avg"], "--hp: objective 'dhpo-e': mixing='avg' contradicts the name"),
])
def test_cli_bad_options_exit_2_with_one_clear_line(args, expect):
    out = _cli(*args)
    assert out.returncode == 2, out.stderr
    assert expect in out.stderr and "Traceback" not in out.stderr


def test_cli_missing_and_corrupt_model_dirs(tmp_path, tiny_model_dir):
    out = _cli("--model", str(tmp_path / "missing"))
    assert out.returncode == 2 and "model directory does not exist" in out.stderr
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "config.json").write_text('{"model_type": "qwen3",\n "hidden_size": }')
    out = _cli("--model", str(corrupt))
    assert out.returncode == 2 and "config.json: line 2 column" in out.stderr and "Traceback" not in out.stderr


def test_model_dir_checks(tmp_path, tiny_model_dir):
    import shutil

    assert check_model_dir(tiny_model_dir) == tiny_model_dir
    broken = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, broken)
    (broken / "model.safetensors").unlink()
    with pytest.raises(ModelDirError, match="no weights"):
        check_model_dir(broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    check_model_dir(broken)  # file checks pass; loading names the path
    with pytest.raises(ModelDirError, match=str(broken)):
        load_model(broken)


def test_verl_backend_forwards_algo_and_overrides():
    from typer.testing import CliRunner

    from dhpo_suite.cli import app

    res = CliRunner().invoke(app, ["train", "--backend", "verl", "--dry-run", "--algo", "gspo",
                                   "trainer.total_epochs=3"])
    assert res.exit_code == 0, res.output
    assert "loss_mode=dhpo_suite.gspo" in res.stdout and "trainer.total_epochs=3" in res.stdout


def test_verl_backend_takes_the_same_settings():
    """--eps-low / --hp reach verl's config under one name each; the printed command runs them."""
    from typer.testing import CliRunner

    from dhpo_suite.cli import app

    res = CliRunner().invoke(app, ["train", "--backend", "verl", "--dry-run", "--algo", "dhpo", "--eps-low", "0.15",
                                   "--hp", "seq_eps_low=0.1", "--hp", "clip=unified"])
    assert res.exit_code == 0, res.output
    command = res.stdout.split()
    assert "actor_rollout_ref.actor.clip_ratio_low=0.15" in command
    assert "+actor_rollout_ref.actor.policy_loss.hparams.seq_eps_low=0.1" in command
    assert "+actor_rollout_ref.actor.policy_loss.hparams.clip=unified" in command


def test_resume_checks_hp_against_the_stored_runs_objective(tmp_path):
    """`--resume --hp ...` without --algo: the settings belong to the stored run's objective (grpo here), and a
    changed one is refused before any model is loaded."""
    from dhpo_suite.runs import Manifest, RunWriter

    cfg = TrainConfig(algo="grpo", hparams={"dual_clip": 3.0}, out=str(tmp_path / "run"))
    manifest = Manifest(algorithm="grpo", hparams=cfg.resolved_hparams(), backend="embedded", config=cfg.to_dict())
    with RunWriter(tmp_path / "run", manifest):
        pass
    out = _cli("--resume", "--out", str(tmp_path / "run"), "--hp", "dual_clip=2", "--no-progress")
    assert out.returncode == 2
    assert "--hp: the run being resumed used {'dual_clip': 3.0}; cannot change it" in out.stderr, out.stderr
