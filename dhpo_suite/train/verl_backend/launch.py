"""`dhpo-suite train --backend verl`: compose verl's config from a preset and an algorithm, then launch verl.

The trainer's CLI (dhpo_suite/train/cli.py) forwards to `run`:

    exit_code = launch.run(algo="dhpo-e", preset="qwen3-4b", overrides=["trainer.nnodes=2"],
                           dry_run=False, out=Path("runs/dhpo-e-qwen3-4b"))

`run` never raises for bad input: it prints one `error: ...` line to stderr and returns 2. `plan` is the
same without printing (raises LaunchError), for programs and tests.

What happens: overrides are generated from the frozen Preset and AlgorithmSettings (overrides.py), the
user's overrides are appended, verl's own `ppo_trainer` config is composed with hydra and checked with
verl's validation and dataclasses; the run directory gets its manifest (with the resolved config); then
`python -m verl.trainer.main_ppo <overrides>` runs (Ray: start the cluster first, see docs/verl.md).
Workers stream telemetry into the run directory; when verl exits the manifest's status is closed.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

__all__ = ["LaunchError", "Plan", "plan", "run", "default_run_dir"]


class LaunchError(ValueError):
    """A bad algorithm, preset, override or input file (one line, names the culprit)."""


@dataclass(frozen=True)
class Plan:
    """A composed, validated verl launch."""

    command: list[str]
    config: Any  # omegaconf DictConfig, resolved by verl's composition
    run_dir: Path
    algorithm: str
    preset: str


def default_run_dir(algo: str, preset: str) -> Path:
    return Path("runs") / f"{algo}-{preset}-{time.strftime('%Y%m%d-%H%M%S')}"


def _first_line(e: BaseException) -> str:
    """The root cause's first line (hydra wraps errors raised while instantiating configs)."""
    while e.__cause__ is not None:
        e = e.__cause__
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


def _merge_user_overrides(generated: list[str], user: Sequence[str]) -> list[str]:
    """Append user overrides; `+key=v` for a key we already generated becomes `key=v` (Hydra would refuse)."""
    ours = {o.lstrip("+").split("=", 1)[0] for o in generated}
    fixed = []
    for o in user:
        key = o.lstrip("+").split("=", 1)[0]
        fixed.append(o.lstrip("+") if o.startswith("+") and not o.startswith("++") and key in ours else o)
    return generated + fixed


def plan(
    algo: str,
    preset: str,
    overrides: Sequence[str] = (),
    out: Path | None = None,
    data_dir: Path = Path("data/verl"),
) -> Plan:
    """Compose and validate the verl config of one run (nothing is launched or written)."""
    from dhpo_suite.train.verl_backend.overrides import Paths, compose, hydra_overrides, validate
    from dhpo_suite.train.verl_backend.presets import algorithm_settings, get_preset

    try:
        settings = algorithm_settings(algo)
    except ValueError as e:
        raise LaunchError(f"--algo: {_first_line(e)}") from None
    try:
        p = get_preset(preset)
    except ValueError as e:
        raise LaunchError(f"--preset: {_first_line(e)}") from None
    run_dir = Path(out or default_run_dir(algo, preset)).resolve()
    data_dir = Path(data_dir)
    paths = Paths(str((data_dir / "train.parquet").resolve()), str((data_dir / "val.parquet").resolve()),
                  str(run_dir), experiment=run_dir.name)
    args = _merge_user_overrides(hydra_overrides(p, settings, paths), overrides)
    try:
        cfg = compose(args)
    except Exception as e:  # hydra's override/config errors
        raise LaunchError(f"verl override: {_first_line(e)}") from None
    try:
        validate(cfg)
    except Exception as e:  # verl's own checks, our knob checks
        raise LaunchError(f"verl config: {_first_line(e)}") from None
    command = [sys.executable, "-m", "verl.trainer.main_ppo", *args]
    return Plan(command, cfg, run_dir, algo, preset)


def _check_inputs(cfg) -> None:
    for key in ("train_files", "val_files"):
        for f in [cfg.data[key]] if isinstance(cfg.data[key], str) else list(cfg.data[key]):
            if not Path(f).exists():
                raise LaunchError(f"data.{key}: {f} not found (run `dhpo-suite data prepare` first)")


def _open_run(pl: Plan):
    """Write the run directory's manifest (resolved config included); the workers append steps."""
    from omegaconf import OmegaConf

    from dhpo_suite.runs import Manifest, RunWriter, TelemetrySpec
    from dhpo_suite.train.verl_backend.overrides import validate
    from dhpo_suite.train.verl_backend.policy_loss import objective_hparams

    actor = validate(pl.config)["actor"]
    hparams = objective_hparams(pl.algorithm, actor, actor.loss_agg_mode)
    spec = TelemetrySpec(**dict(actor.policy_loss.telemetry or {}))
    manifest = Manifest(
        algorithm=pl.algorithm,
        hparams={**hparams, "preset": pl.preset, "lr": actor.optim.lr},
        model=str(pl.config.actor_rollout_ref.model.path),
        task=str(pl.config.data.train_files),
        backend="verl",
        seed=int(pl.config.data.get("seed", 0) or 0),
        config=OmegaConf.to_container(pl.config, resolve=True),
        telemetry=spec.to_dict(),
    )
    return RunWriter(pl.run_dir, manifest, resume=(pl.run_dir / "manifest.json").exists())


def run(
    algo: str,
    preset: str,
    overrides: Sequence[str] = (),
    dry_run: bool = False,
    out: Path | None = None,
    data_dir: Path = Path("data/verl"),
) -> int:
    """Launch (or with dry_run print) one verl run; returns the exit code (2 = bad input, one error line)."""
    from omegaconf import OmegaConf

    try:
        pl = plan(algo, preset, overrides, out, data_dir)
        if dry_run:
            print(shlex.join(pl.command))
            print(OmegaConf.to_yaml(pl.config, resolve=True))
            return 0
        _check_inputs(pl.config)
        writer = _open_run(pl)
    except LaunchError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"run directory: {pl.run_dir}\n{shlex.join(pl.command)}", flush=True)
    try:
        code = subprocess.call(pl.command)
    except KeyboardInterrupt:
        writer.close("interrupted", "KeyboardInterrupt")
        return 130
    writer.close("completed" if code == 0 else "failed", None if code == 0 else f"verl exited with code {code}")
    return code
