"""`--resume` checks a checkpoint's trainer state against its model before training (issue 29).

Each case damages the step-2 trainer state of a real run (or its weights) in a way that unpickles cleanly
and used to fail minutes later with a bare PyTorch error ("The size of tensor a (3) must match ...", "not enough
values to unpack", "probability tensor contains either inf, nan"). Now `restore_latest` passes over it with one
warning naming the file and field and resumes from step 1, as it does for an unreadable file.
"""

from __future__ import annotations

import math
import shutil

import pytest
import torch

from dhpo_suite.runs.lock import LOCK_FILE


def _moment_shape(s):  # both moments of parameter 0 replaced by vectors of 3 (consistent with each other)
    s["optimizer"]["state"][0].update(exp_avg=torch.zeros(3), exp_avg_sq=torch.zeros(3))


def _second_group(s):
    s["optimizer"]["param_groups"].append({**s["optimizer"]["param_groups"][0], "params": []})


def _fewer_params(s):
    s["optimizer"]["param_groups"][0]["params"] = s["optimizer"]["param_groups"][0]["params"][:-1]


def _short_generator(s):
    s["generator"] = s["generator"][:100]


def _python_rng(s):
    s["python_rng"] = (3, (0,) * 10, None)


def _nan_lr(s):
    s["optimizer"]["param_groups"][0]["lr"] = math.nan


def _nan_base_lr(s):
    s["scheduler"]["base_lrs"] = [math.nan]


def _inf_moment(s):
    s["optimizer"]["state"][1]["exp_avg_sq"][0] = math.inf


BAD_STATES = [
    ("moment-shape", _moment_shape, "optimizer.state[0].exp_avg: shape [3], but the model's"),
    ("two-groups", _second_group, "optimizer.param_groups: 2 groups; the trainer's AdamW has 1"),
    ("fewer-params", _fewer_params, "optimizer.param_groups[0].params: 45 parameters; the model has 46"),
    ("generator-size", _short_generator, "generator: not a CPU RNG state (expected torch.uint8 [5056]"),
    ("python-rng", _python_rng, "python_rng: not a Python random state"),
    ("nan-lr", _nan_lr, "optimizer.param_groups[0].lr: must be a finite number, got nan"),
    ("nan-scheduler", _nan_base_lr, "scheduler.base_lrs: must be one finite rate"),
    ("inf-moment", _inf_moment, "optimizer.state[1].exp_avg_sq: holds NaN or infinite values"),
]


@pytest.fixture(scope="module")
def two_checkpoints(tiny_model_dir, tmp_path_factory):
    """A real embedded run of 2 small steps on the (random) tiny model, a checkpoint after each: what the trainer
    writes, without the SFT warm-start the CI run needs (its weights do not matter here, only their shapes)."""
    from dhpo_suite.train.embedded import TrainConfig, train

    out = tmp_path_factory.mktemp("two-checkpoints") / "run"
    cfg = TrainConfig(model=str(tiny_model_dir), steps=2, checkpoint_every=1, eval_every=0, eval_prompts=4,
                      prompts_per_step=2, group_size=2, max_new_tokens=8, out=str(out))
    return train(cfg, show_progress=False)


def _copy(run, dest):
    return shutil.copytree(run.run_dir, dest, ignore=shutil.ignore_patterns(LOCK_FILE))


def _restore(run_dir):
    from dhpo_suite.models.local import load_model
    from dhpo_suite.train.embedded.checkpoint import restore_latest

    warnings: list[str] = []
    restored = restore_latest(run_dir, lambda p: load_model(p, safetensors_only=True), warnings.append)
    return restored, warnings


@pytest.mark.parametrize("case", BAD_STATES, ids=[c[0] for c in BAD_STATES])
def test_a_bad_trainer_state_falls_back_to_the_previous_checkpoint(two_checkpoints, tmp_path, case):
    _, damage, field = case
    run = _copy(two_checkpoints, tmp_path / "run")
    file = run / "checkpoints" / "step-000002" / "trainer_state.pt"
    state = torch.load(file, weights_only=True)
    damage(state)
    torch.save(state, file)
    restored, warnings = _restore(run)
    assert restored is not None and restored.step == 1
    assert len(warnings) == 1 and "checkpoint step 2 unusable" in warnings[0], warnings
    assert f"{file}: {field}" in warnings[0], warnings[0]
    assert "falling back to step 1" in warnings[0]


def test_nan_weights_fall_back_to_the_previous_checkpoint(two_checkpoints, tmp_path):
    from safetensors.torch import load_file, save_file

    run = _copy(two_checkpoints, tmp_path / "run")
    weights_file = run / "checkpoints" / "step-000002" / "model.safetensors"
    weights = load_file(weights_file)
    name = sorted(weights)[0]
    weights[name][0] = math.nan
    save_file(weights, weights_file, metadata={"format": "pt"})
    restored, warnings = _restore(run)
    assert restored is not None and restored.step == 1
    assert len(warnings) == 1 and "the weights hold NaN or infinite values" in warnings[0], warnings


def test_the_real_states_pass(two_checkpoints):
    """The checks accept what the trainer writes (the newest checkpoint, against its own model)."""
    restored, warnings = _restore(two_checkpoints.run_dir)
    assert restored is not None and restored.step == 2 and warnings == []


def test_the_cli_resumes_from_the_previous_checkpoint(two_checkpoints, tmp_path):
    """The user's path: `train --resume` on a run whose last trainer state has moments of another shape warns
    once, retrains step 2 from step 1 and goes on to step 3, each new state fitting the model. (At --steps 2 the
    run is already finished: its step-2 weights are whole, and nothing is resumed.)"""
    from typer.testing import CliRunner

    from dhpo_suite.cli import app
    from dhpo_suite.train.embedded.checkpoint import read_trainer_state

    run = _copy(two_checkpoints, tmp_path / "run")
    file = run / "checkpoints" / "step-000002" / "trainer_state.pt"
    state = torch.load(file, weights_only=True)
    _moment_shape(state)
    torch.save(state, file)
    res = CliRunner().invoke(app, ["train", "--resume", "--out", str(run), "--no-progress", "--steps", "3"])
    assert res.exit_code == 0, res.stderr
    # (vLLM, if it ran earlier in this process, adds a --threads warning: not this test's subject)
    warnings = [line for line in res.stderr.splitlines() if line.startswith("warning: checkpoint")]
    assert len(warnings) == 1 and "optimizer.state[0].exp_avg: shape [3]" in warnings[0], res.stderr
    assert "falling back to step 1" in warnings[0] and "Traceback" not in res.output
    assert read_trainer_state(file.parent)["optimizer"]["state"][0]["exp_avg"].shape != (3,)
    restored, again = _restore(run)
    assert restored.step == 3 and again == []
