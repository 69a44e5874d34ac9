"""Tracking fixtures: offline W&B everywhere (no account, no network), small synthetic runs."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def offline_wandb(monkeypatch, tmp_path):
    """W&B offline with no key and its own config/cache folders: nothing reaches the network or ~/.config."""
    for var in ("WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_ENTITY", "WANDB_PROJECT", "WANDB_RUN_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    for var, sub in (("WANDB_CONFIG_DIR", "wandb-config"), ("WANDB_CACHE_DIR", "wandb-cache"),
                     ("WANDB_DATA_DIR", "wandb-data")):
        monkeypatch.setenv(var, str(tmp_path / sub))


@pytest.fixture
def synthetic_run(tmp_path):
    """synthetic_run(steps, algo) -> a run directory written by testing.synthetic_runs (the trainer's real format)."""
    from dhpo_suite.testing.synthetic_runs import write_synthetic_run

    def make(steps: int = 12, algo: str = "dhpo-e", name: str = "run"):
        path = tmp_path / "runs" / name
        write_synthetic_run(path, steps=steps, algo=algo, seed=3)
        return path

    return make
