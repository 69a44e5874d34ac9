"""The manifest of a verl run, built from verl's composed `ppo_trainer` config, one way for both ways in.

    dhpo-suite train --backend verl     launch.py writes it (RunWriter) before verl's driver starts, and
                                        closes it when the driver exits
    python -m verl.trainer.main_ppo     the driver's start-up check writes it (`write_if_absent`) when the
      ... +policy_loss.run_dir=R        run directory has none yet; the writing worker then resumes it; verl's
                                        task runner closes it when `fit` ends (`close_plain`)

Both record verl's seed (`seed_of`), the training files as the task and the resolved config, which a worker
(whose actor config holds neither) cannot.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["build", "close_plain", "seed_of", "write_if_absent"]


def seed_of(cfg: Any) -> int:
    """The seed verl ran with: `data.seed` (the training sampler's, unseeded when null), else the rollout's
    `actor_rollout_ref.rollout.seed` (verl's YAML: 42)."""
    seed = cfg.data.get("seed", None)
    return int(seed if seed is not None else cfg.actor_rollout_ref.rollout.get("seed", 0) or 0)


def build(cfg: Any, actor: Any, objective_hparams: dict[str, Any], algorithm: str, preset: str | None = None) -> Any:
    """The Manifest (runs/manifest.py) of a run of `algorithm` with the composed `cfg`; `actor`: its actor
    section (a verl dataclass or the config node)."""
    from omegaconf import OmegaConf

    from dhpo_suite.runs import Manifest, TelemetrySpec, run_hparams
    from dhpo_suite.train.verl_backend.hparams import verl_shared_hparams

    extra = {"preset": preset} if preset is not None else {}
    shared = verl_shared_hparams(actor, int(cfg.data.train_batch_size))
    return Manifest(
        algorithm=algorithm,
        hparams=run_hparams(objective_hparams, shared, **extra),
        model=str(cfg.actor_rollout_ref.model.path),
        task=str(cfg.data.train_files),
        backend="verl",
        seed=seed_of(cfg),
        config=OmegaConf.to_container(cfg, resolve=True),
        telemetry=TelemetrySpec(**dict(actor.policy_loss.telemetry or {})).to_dict(),
    )


def write_if_absent(cfg: Any, objective_hparams: dict[str, Any], algorithm: str) -> Path | None:
    """A plain launch's manifest (status running), written once into `policy_loss.run_dir` when it holds none
    (a launcher's, or an earlier launch's, stays); the path written, or None."""
    from omegaconf import OmegaConf

    from dhpo_suite.runs.format import manifest_path
    from dhpo_suite.runs.writer import atomic_write_bytes

    run_dir = OmegaConf.select(cfg, "actor_rollout_ref.actor.policy_loss.run_dir", default=None)
    if not run_dir or manifest_path(Path(str(run_dir))).exists():
        return None
    manifest = build(cfg, cfg.actor_rollout_ref.actor, objective_hparams, algorithm)
    manifest.name = manifest.name or Path(str(run_dir)).name
    manifest.fill_provenance()
    path = manifest_path(Path(str(run_dir)))
    atomic_write_bytes(path, json.dumps(manifest.to_dict(), indent=1, default=str).encode())
    return path


def close_plain(run_dir: str, exit_code: int) -> bool:
    """A plain launch's manifest closed when verl's task runner finishes the run's tracking: `completed` after
    `fit` returned (exit code 0), `failed` after it raised. A launched run (its launcher holds the run
    directory's lock, runs/lock.py) is left to the launcher, which closes it by how verl's driver exited. True
    when closed here."""
    from dhpo_suite.runs import RunWriter, read_manifest
    from dhpo_suite.runs.format import manifest_path
    from dhpo_suite.runs.lock import holder_of

    path = Path(run_dir)
    if not manifest_path(path).exists() or holder_of(path) is not None:
        return False
    writer = RunWriter(path, read_manifest(path), resume=True)
    writer.close("completed" if exit_code == 0 else "failed",
                 None if exit_code == 0 else f"verl's fit raised (exit code {exit_code}; see verl's log)")
    return True
