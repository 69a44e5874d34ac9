"""verl's own `Tracking` (trainer.logger) carries our step telemetry next to verl's metrics, on verl's steps.

These drive verl's real `verl.utils.tracking.Tracking` the way its trainer does (built with the resolved
config, `log(metrics, step=global_steps)` once per step after the update committed the step to our run
directory), with its real TensorBoard and offline W&B backends.
"""

from __future__ import annotations

import logging

import pytest

from dhpo_suite.runs import RunReader
from tests.tracking import readback, wandb_records

VERL_METRICS = frozenset({"actor/pg_clipfrac", "critic/score/mean", "training/global_step"})


@pytest.fixture
def Tracking():
    import verl  # noqa: F401 - imports our plugin (verl.plugins entry point)
    from verl.utils import tracking

    from dhpo_suite.train.verl_backend import plugin

    plugin.install()  # idempotent; also when the entry point is disabled (VERL_USE_EXTERNAL_PLUGINS)
    assert getattr(tracking.Tracking, "__dhpo_suite_tracking__", False)
    return tracking.Tracking


def _config(run_dir, loss_mode="dhpo_suite.dhpo-e"):
    """The parts of verl's resolved ppo_trainer config that Tracking and our hook read."""
    return {"trainer": {"project_name": "p", "experiment_name": "e"},
            "actor_rollout_ref": {"actor": {"policy_loss": {"loss_mode": loss_mode, "run_dir": str(run_dir)}}}}


def _train(tracker, steps):
    for step in steps:  # what verl's fit() logs after each step
        tracker.log(data={"actor/pg_clipfrac": 0.01 * step, "critic/score/mean": 0.5,
                          "training/global_step": step}, step=step)
    tracker.finish()


def test_tensorboard_holds_verl_metrics_and_ours_on_the_same_steps(Tracking, synthetic_run, tmp_path,
                                                                   monkeypatch):
    run = synthetic_run(steps=4)
    monkeypatch.setenv("TENSORBOARD_DIR", str(tmp_path / "tb"))
    _train(Tracking("p", "e", default_backend=["console", "tensorboard"], config=_config(run)), range(1, 5))
    assert len(list((tmp_path / "tb").glob("events.out.tfevents.*"))) == 1  # one event file: verl's
    acc = readback.tensorboard_events(tmp_path / "tb")
    readback.assert_tensorboard_matches(acc, run, other_tags=VERL_METRICS)
    assert [e.step for e in acc.Scalars("actor/pg_clipfrac")] == [e.step for e in acc.Scalars("clip/mixed/binding")]
    assert readback.tensorboard_manifest(acc, "dhpo_suite/manifest") == RunReader(run).manifest.to_dict()


def test_one_wandb_run_holds_verl_metrics_and_ours(Tracking, synthetic_run, tmp_path, monkeypatch):
    import wandb

    run = synthetic_run(steps=10)
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    _train(Tracking("p", "e", default_backend=["wandb"], config=_config(run)), range(1, 11))
    wandb.teardown()  # as at process exit: the service writes the offline run's last records
    offline = wandb_records.offline_run(tmp_path)
    history = wandb_records.history(offline)
    readback.assert_wandb_matches(history, run, other_keys=VERL_METRICS | {"samples"})
    assert all(history[s]["actor/pg_clipfrac"] == pytest.approx(0.01 * s) for s in range(1, 11))
    assert "samples" in history[10]  # the sampled rollouts table, every 10 steps
    config = wandb_records.config(offline)
    assert config["trainer"] == {"project_name": "p", "experiment_name": "e"}  # verl's config, untouched
    assert config["dhpo_suite"] == RunReader(run).manifest.to_dict()  # our manifest beside it


def test_runs_without_our_loss_are_left_alone(Tracking, synthetic_run, tmp_path, monkeypatch):
    monkeypatch.setenv("TENSORBOARD_DIR", str(tmp_path / "tb"))
    tracker = Tracking("p", "e", default_backend=["tensorboard"], config=_config(synthetic_run(2), "vanilla"))
    assert tracker._dhpo_mirror is None
    _train(tracker, [1, 2])
    assert set(readback.tensorboard_events(tmp_path / "tb").Tags()["scalars"]) == VERL_METRICS


def test_an_unreadable_run_directory_warns_once_and_verl_logs_on(Tracking, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TENSORBOARD_DIR", str(tmp_path / "tb"))
    tracker = Tracking("p", "e", default_backend=["tensorboard"], config=_config(tmp_path / "missing"))
    with caplog.at_level(logging.WARNING):
        _train(tracker, [1, 2, 3])
    ours = [r for r in caplog.records if "dhpo_suite" in r.getMessage()]
    assert len(ours) == 1 and "manifest.json" in ours[0].getMessage()
    acc = readback.tensorboard_events(tmp_path / "tb")
    assert [e.step for e in acc.Scalars("actor/pg_clipfrac")] == [1, 2, 3]


def _as_a_plain_launch_left_it(run):
    """The manifest as a plain launch's driver writes it (run_manifest.write_if_absent): status running."""
    import json

    from dhpo_suite.runs import read_manifest
    from dhpo_suite.runs.writer import atomic_write_bytes

    m = read_manifest(run)
    m.status, m.ended_at = "running", None
    atomic_write_bytes(run / "manifest.json", json.dumps(m.to_dict(), default=str).encode())
    return run


def test_verl_finishing_a_plain_launch_closes_its_manifest(Tracking, synthetic_run):
    """verl's TaskRunnerV1.run calls `finish(exit_code=0)` right after `fit` returned and 1 after it raised
    (verl 0.9.1's main_ppo.py). A plain launch's run is closed by it; a Tracking merely collected (`__del__`:
    `finish()`, no code) and a launched run (its launcher holds the lock and closes it itself) are not."""
    from dhpo_suite.runs import read_manifest
    from dhpo_suite.runs.lock import DirLock

    runs = {n: _as_a_plain_launch_left_it(synthetic_run(2, name=n)) for n in ("fit", "raised", "collected", "launched")}
    for name, code in (("fit", 0), ("raised", 1)):
        Tracking("p", "e", default_backend="console", config=_config(runs[name])).finish(exit_code=code)
    Tracking("p", "e", default_backend="console", config=_config(runs["collected"])).finish()
    with DirLock(runs["launched"]):
        Tracking("p", "e", default_backend="console", config=_config(runs["launched"])).finish(exit_code=0)
    ended = {n: read_manifest(run) for n, run in runs.items()}
    assert {n: m.status for n, m in ended.items()} == {"fit": "completed", "raised": "failed",
                                                        "collected": "running", "launched": "running"}
    assert ended["fit"].ended_at and "verl's fit raised (exit code 1" in ended["raised"].error


@pytest.mark.slow
def test_logger_option_joins_verls_trainer_logger():
    """`--backend verl --logger tensorboard`: verl's composed config logs to console and tensorboard."""
    import re

    from typer.testing import CliRunner

    from dhpo_suite.cli import app

    result = CliRunner().invoke(app, ["train", "--backend", "verl", "--dry-run", "--logger", "tensorboard"])
    assert result.exit_code == 0, result.output[-2000:]
    assert re.search(r"\n  logger:\n  - console\n  - tensorboard\n", result.output), result.output[-2000:]


@pytest.mark.slow
def test_a_verl_worker_run_shows_beside_verls_actor_metrics(Tracking, tiny_model_dir, tmp_path, monkeypatch):
    """verl's real actor worker (FSDP2, our dhpo-e loss, CPU) writes the run directory; verl's Tracking, fed
    that worker's own actor metrics the way verl's trainer reduces and logs them, shows both side by side."""
    from dhpo_suite.testing.verl_worker import LocalCase, run_distributed

    runs = tmp_path / "verl-runs"
    case = LocalCase(str(tiny_model_dir), ("dhpo-e",), run_dir=str(runs), prompts=3, group_size=2,
                     mini_batches=1, steps=2)
    results = run_distributed(case, world=1, timeout=300)[0]
    monkeypatch.setenv("TENSORBOARD_DIR", str(tmp_path / "tb"))
    tracker = Tracking("p", "e", default_backend=["console", "tensorboard"], config=_config(runs / "dhpo-e"))
    verl_tags = set()
    from verl.utils.metric import reduce_metrics
    from verl.utils.py_functional import rename_dict

    for r in results:  # as verl's trainer (ray_trainer._update_actor, then fit): prefix, reduce, log at the step
        metrics = rename_dict(r["metrics"], "actor/")
        metrics["perf/mfu/actor"] = metrics.pop("actor/mfu")
        metrics = {k: float(v) for k, v in reduce_metrics(metrics).items()}
        verl_tags |= set(metrics)
        tracker.log(data=metrics, step=r["step"])
    tracker.finish()
    acc = readback.tensorboard_events(tmp_path / "tb")
    readback.assert_tensorboard_matches(acc, runs / "dhpo-e", other_tags=frozenset(verl_tags))
    assert {"actor/pg_clipfrac", "clip/token/binding", "clip/sequence/binding", "clip/mixed/binding"} <= set(
        acc.Tags()["scalars"])
    assert {"log_ratio/mixed/pos", "entropy"} <= set(acc.Tags()["histograms"])
    assert [e.step for e in acc.Scalars("actor/pg_clipfrac")] == [e.step for e in acc.Scalars("clip/mixed/binding")]
