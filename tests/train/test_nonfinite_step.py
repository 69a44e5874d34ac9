"""A step whose loss turns NaN stops the run (issue 44): one line naming the step and the quantity, exit 2, the
manifest says failed, the checkpoint before it is kept as it was, and no "done". The NaN comes from a registered
objective (docs/extending.md) whose loss is NaN from its second call on: one call per step here, so step 2."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

NAME = "nan-from-step-2"


@pytest.fixture()
def nan_objective():
    """The objective, registered as docs/extending.md does, and removed after the test (other tests list the
    registry)."""
    from dhpo_suite.train.objectives import get_objective
    from dhpo_suite.train.objectives import registry

    grpo, calls = get_objective("grpo"), []

    @registry.register_objective(NAME)
    def nan_from_step_2(x, *, loss_agg_mode: str = "token-mean"):
        out = grpo.fn(x, **grpo.hparams)
        calls.append(1)
        if len(calls) >= 2:
            out = dataclasses.replace(out, loss=out.loss * float("nan"))
        return out

    yield NAME
    registry._REGISTRY.pop(NAME, None)
    registry._NEEDS_ENTROPY.pop(NAME, None)


def test_a_nan_loss_stops_the_run_at_its_step(nan_objective, tiny_model_dir, tmp_path, monkeypatch):
    from dhpo_suite.cli import app
    from dhpo_suite.runs import RunReader

    monkeypatch.setenv("DHPO_SUITE_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "run"
    res = CliRunner().invoke(app, [
        "train", "--algo", NAME, "--model", str(tiny_model_dir), "--out", str(run), "--steps", "3",
        "--checkpoint-every", "1", "--prompts-per-step", "2", "-G", "2", "--mini-batches", "1", "--train-pool", "4",
        "--eval-prompts", "1", "--eval-every", "0", "--max-new-tokens", "4", "--no-progress"])
    lines = [line for line in res.stderr.splitlines() if line.startswith("error")]
    assert res.exit_code == 2, (res.stderr, res.exception)
    assert lines == [lines[0]] and lines[0].startswith("error: step 2: the loss is nan"), res.stderr
    assert "done:" not in res.stderr
    r = RunReader(run)
    assert r.manifest.status == "failed" and "step 2" in (r.manifest.error or "")
    assert sorted(r.checkpoints()) == [1] and r.steps() == [1]
    first = r.checkpoints()[1]
    weights = hashlib.sha256((first / "model.safetensors").read_bytes()).hexdigest()
    assert Path(first / "trainer_state.pt").is_file() and weights  # step 1's checkpoint, complete and readable
