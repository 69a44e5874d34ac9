"""End to end: a CI-sized run learns, writes a complete run directory, and resumes after SIGKILL exactly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

CI_STEPS = 8

pytestmark = pytest.mark.slow


def test_ci_run_improves_heldout_reward(ci_run):
    """Held-out reward (128 unseen problems, temperature 1.0) after training beats the one before."""
    assert ci_run.last_step == CI_STEPS
    assert ci_run.heldout_final > ci_run.heldout_initial, (ci_run.heldout_initial, ci_run.heldout_final)


def test_run_directory_is_complete(ci_run, ci_config):
    from transformers import AutoModelForCausalLM

    from dhpo_suite.runs import RunReader
    from dhpo_suite.train.embedded import TrainConfig

    r = RunReader(ci_run.run_dir)
    m = r.manifest
    assert (m.algorithm, m.backend, m.task, m.status) == ("dhpo-e", "embedded", "arithmetic", "completed")
    assert TrainConfig(**m.config) == ci_config(ci_run.run_dir)  # the resolved config, whole
    assert m.hparams["mixing"] == "entropy" and m.hparams["lr"] == 1e-4
    from dhpo_suite.runs import SHARED_HPARAMS  # the keys the verl backend records too (tests/verl/test_launch.py)

    assert {k: m.hparams[k] for k in SHARED_HPARAMS} == {k: m.config[k] for k in SHARED_HPARAMS}
    assert r.steps() == list(range(1, CI_STEPS + 1))
    s = r.scalars()
    for col in ("reward/mean", "entropy/mean", "w/mean", "clip/token/binding", "clip/sequence/outside_high",
                "kl/k3", "length/mean", "grad_norm", "lr", "time/rollout_s", "time/update_s", "time/telemetry_s",
                "throughput/rollout_tok_s"):
        assert col in s and s[col].notna().all(), col
    assert s["eval/heldout_reward_initial"].notna().sum() == 1
    assert s["eval/heldout_reward"].dropna().iloc[-1] == pytest.approx(ci_run.heldout_final)
    assert s["tokens/count"].gt(0).all() and s["responses/count"].eq(128).all()
    assert "entropy" in r.distribution_names(1) and len(r.samples(1)) > 0
    # Every kept response (sampled or an outlier's) records the problem it answered and that problem's gold,
    # as the task generated them: one pair per group of G responses.
    from dhpo_suite.tasks import TASKS

    pool = {(q["problem"], str(q["answer"])) for q in TASKS["arithmetic"].make_problems(
        m.config["train_pool"], seed=m.config["seed"], split="train")}
    kept = r.responses(1)
    assert kept["prompt"].notna().all() and kept["gold"].notna().all()
    assert set(zip(kept["prompt"], kept["gold"])) <= pool
    assert kept.groupby(kept["response_id"] // m.config["group_size"])["prompt"].nunique().eq(1).all()
    assert set(r.checkpoints()) == {4, 8}
    model = AutoModelForCausalLM.from_pretrained(r.checkpoints()[8])
    assert model.config.model_type == "qwen3"


def _weights(path):
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def test_sigkill_then_resume_reaches_the_same_final_step_and_weights(ci_config, tmp_path, user_env):
    """Killed after its step-2 checkpoint and resumed, a run ends with the weights of an uninterrupted one.

    Every run is its own `dhpo-suite train` process started with the user's environment: this pytest process
    may have run vLLM by now (tests/eval), which changes native-library state, so in-process floats are not a
    fair reference for a fresh process's.
    """
    from dhpo_suite.runs import RunReader

    def command(out, *extra):
        cfg = ci_config(out)
        return [sys.executable, "-m", "dhpo_suite.cli", "train", "--model", cfg.model, "--steps", str(cfg.steps),
                "--out", str(out), "--checkpoint-every", "2", "--eval-every", "0", "--eval-prompts", "8",
                "--no-progress", *extra]

    ref, out = tmp_path / "uninterrupted", tmp_path / "killed"
    subprocess.run(command(ref), env=user_env, check=True, capture_output=True, timeout=600)
    proc = subprocess.Popen(command(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=user_env)
    marker = out / "checkpoints" / "step-000002" / "COMPLETE"
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), proc.stderr.read() if proc.poll() is not None else "no checkpoint within 300 s"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert RunReader(out).manifest.status == "running"  # SIGKILL: nothing got to close the run
    subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "train", "--resume", "--out", str(out), "--no-progress"],
                   env=user_env, check=True, capture_output=True, timeout=600)
    reader = RunReader(out)
    assert reader.steps() == list(range(1, CI_STEPS + 1)) and reader.manifest.status == "completed"
    resumed = _weights(reader.checkpoints()[CI_STEPS])
    reference = _weights(RunReader(ref).checkpoints()[CI_STEPS])
    for name, tensor in reference.items():
        torch.testing.assert_close(resumed[name], tensor, rtol=0, atol=0, msg=name)  # deterministic for a seed


def test_resume_refuses_a_changed_objective(ci_run):
    from dhpo_suite.train.embedded import ConfigError, TrainConfig, train

    with pytest.raises(ConfigError, match="algo"):
        train(TrainConfig(out=str(ci_run.run_dir), resume=True, algo="grpo"), show_progress=False)


def test_new_run_refuses_an_existing_run_directory(ci_run):
    from dhpo_suite.train.embedded import ConfigError, TrainConfig, train

    with pytest.raises(ConfigError, match="already holds a run"):
        train(TrainConfig(out=str(ci_run.run_dir)), show_progress=False)


def _copy_run(ci_run, dest):
    import shutil

    from dhpo_suite.runs.lock import LOCK_FILE

    shutil.copytree(ci_run.run_dir, dest, ignore=shutil.ignore_patterns(LOCK_FILE))
    return dest


@pytest.fixture(scope="module")
def redone_from_step4(ci_run, tmp_path_factory, user_env):
    """The CI run resumed from its step-4 checkpoint (step 8's removed), in a fresh process: the reference for a
    fallback to step 4. Not the uninterrupted run itself, which was trained in this process (see _resume_cli;
    the SIGKILL test's fresh processes check that a resume equals an uninterrupted run)."""
    import shutil

    out = _copy_run(ci_run, tmp_path_factory.mktemp("redone") / "run")
    shutil.rmtree(out / "checkpoints" / "step-000008")
    code, err = _resume_cli(out, env=user_env)
    assert code == 0, err
    return out


def _resume_cli(out, *extra, env=None):
    """`dhpo-suite train --resume --out OUT ...`; (exit code, stderr). In-process, or with `env` (the user's
    environment) its own process: weights compared bit for bit must come from fresh processes, because once vLLM
    ran in this process (tests/eval) its CPU worker makes `torch.set_num_threads` a no-op, and the trainer's one
    thread becomes vLLM's several (other reductions, other floats)."""
    argv = ["train", "--resume", "--out", str(out), "--no-progress", *extra]
    if env is not None:
        proc = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", *argv], env=env, capture_output=True,
                              text=True, timeout=600)
        return proc.returncode, proc.stderr
    from typer.testing import CliRunner

    from dhpo_suite.cli import app

    res = CliRunner().invoke(app, argv)
    return res.exit_code, res.stderr


class _RunsCode:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def test_a_corrupt_final_checkpoint_falls_back_to_the_previous_one_exactly(ci_run, redone_from_step4, tmp_path,
                                                                                user_env):
    """The issue's case: trainer_state.pt of the last COMPLETE checkpoint is damaged. Resume warns in one line,
    restarts from step 4 and reaches, bit for bit, the step-8 weights of a clean resume from step 4."""
    out = _copy_run(ci_run, tmp_path / "run")
    state = out / "checkpoints" / "step-000008" / "trainer_state.pt"
    state.write_bytes(state.read_bytes()[:1000])
    code, err = _resume_cli(out, env=user_env)
    assert code == 0, err
    warning = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "checkpoint step 8 unusable" in warning[0] and "falling back to step 4" in warning[0]
    assert str(state) in warning[0]
    assert "Traceback" not in err
    reference = _weights(redone_from_step4 / "checkpoints" / "step-000008")
    resumed = _weights(out / "checkpoints" / "step-000008")
    for name, tensor in reference.items():
        torch.testing.assert_close(resumed[name], tensor, rtol=0, atol=0, msg=name)


def test_crafted_pickle_weights_in_a_checkpoint_never_run(ci_run, redone_from_step4, tmp_path, user_env):
    """Step 8's weights replaced by a pytorch_model.bin that runs a command when unpickled: resume reads
    safetensors only, so it falls back to step 4 and the command never runs."""
    out = _copy_run(ci_run, tmp_path / "run")
    marker = tmp_path / "PWNED"
    step8 = out / "checkpoints" / "step-000008"
    weights = _weights(step8)
    (step8 / "model.safetensors").unlink()
    torch.save({**weights, "lm_head.weight": _RunsCode(marker)}, step8 / "pytorch_model.bin")
    code, err = _resume_cli(out, "--steps", "9", env=user_env)
    assert code == 0, err
    assert not marker.exists()
    assert "checkpoint step 8 unusable" in err and "falling back to step 4" in err
    reference = _weights(redone_from_step4 / "checkpoints" / "step-000008")
    for name, tensor in reference.items():  # step 8 redone from step 4, exactly
        torch.testing.assert_close(_weights(step8)[name], tensor, rtol=0, atol=0, msg=name)


def test_resuming_a_finished_run_says_so_with_its_real_figures(ci_run):
    manifest = (ci_run.run_dir / "manifest.json").read_bytes()
    code, err = _resume_cli(ci_run.run_dir)
    assert code == 0, err
    assert (f"already finished at step {CI_STEPS} of {CI_STEPS}; held-out reward {ci_run.heldout_initial:.3f} -> "
            f"{ci_run.heldout_final:.3f}") in err
    assert (ci_run.run_dir / "manifest.json").read_bytes() == manifest  # nothing rewritten
    code, err = _resume_cli(ci_run.run_dir, "--steps", "3")
    assert code == 2 and err.strip() == (f"error: --steps: 3 is fewer than the {CI_STEPS} steps {ci_run.run_dir} "
                                         f"has already recorded; give --steps {CI_STEPS} or more")
