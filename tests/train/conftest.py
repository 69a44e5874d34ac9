"""Trainer fixtures: the SFT warm-started tiny model (shared with `dhpo-suite train`'s cache) and a CI run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

# The CI-sized run: 8 steps of 16 prompts x G=8 on the warm-started tiny model (~30-60 s on 2 cores).
CI_STEPS = 8


@pytest.fixture(scope="session")
def warm_tiny_dir() -> Path:
    """The default run's warm-started tiny model, from $DHPO_SUITE_CACHE (built there on first use)."""
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import TrainConfig
    from dhpo_suite.train.embedded.run_setup import sft_accuracy_fn, resolve_model_dir

    cfg = TrainConfig()
    task = get_task(cfg.task)
    with GraderPool(workers=1) as pool:
        return resolve_model_dir(cfg, task, sft_accuracy_fn(cfg, task, pool), log=print)


@pytest.fixture(scope="session")
def ci_config(warm_tiny_dir):
    """ci_config(out, **changes) -> the CI run's TrainConfig writing to `out`."""
    from dhpo_suite.train.embedded import TrainConfig

    def make(out: Path, **changes) -> TrainConfig:
        base = TrainConfig(model=str(warm_tiny_dir), steps=CI_STEPS, out=str(out), checkpoint_every=4, eval_every=0)
        return dataclasses.replace(base, **changes)

    return make


@pytest.fixture(scope="session")
def ci_run(ci_config, tmp_path_factory):
    """One CI-sized DHPO-E run (TrainResult) shared by the tests that read it."""
    from dhpo_suite.train.embedded import train

    out = tmp_path_factory.mktemp("ci-run") / "run"
    return train(ci_config(out), show_progress=False)
