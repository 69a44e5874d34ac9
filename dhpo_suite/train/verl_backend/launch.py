"""`dhpo-suite train --backend verl`: compose verl's config from a preset and an algorithm, then launch verl.

The trainer's CLI (dhpo_suite/train/cli.py) forwards to `run`:

    exit_code = launch.run(algo="dhpo-e", preset="qwen3-4b", overrides=["trainer.nnodes=2"],
                           dry_run=False, out=Path("runs/dhpo-e-qwen3-4b"))

`run` never raises for bad input: it prints one `error: ...` line to stderr and returns 2. `plan` is the
same without printing (raises LaunchError), for programs and tests.

What happens: overrides are generated from the frozen Preset and AlgorithmSettings (overrides.py), the user's
are appended; verl's `ppo_trainer` config is composed with Hydra, checked by our start-up check (startup.py)
and verl's validation; the run directory is locked and gets its manifest; then `python -m
verl.trainer.main_ppo <overrides>` runs on Ray. When verl exits the manifest is closed: completed, failed, or
interrupted (SIGTERM/SIGINT/SIGHUP, supervise.py). Whenever a step count is set (`--steps N`, the preset's
or `trainer.total_training_steps`), `trainer.total_epochs` is raised to it unless the user set it: verl's loop
also stops at the end of `total_epochs`. With `VERL_PLATFORM=cpu` the CPU platform's overrides come before
the user's (cpu_platform.py).
"""

from __future__ import annotations

import difflib
import re
import shlex
import signal
import sys
import time
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any, Sequence

from dhpo_suite.train.verl_backend.override_syntax import override_keys, override_value, split_override
from dhpo_suite.train.verl_backend.supervise import supervise

__all__ = ["LaunchError", "Plan", "plan", "run", "finish", "supervise"]


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
    resolution: Any = None  # hparams.Resolution: what the loss uses and where each value came from


def _first_line(e: BaseException) -> str:
    """The root cause's first line (hydra wraps errors raised while instantiating configs)."""
    while e.__cause__ is not None:
        e = e.__cause__
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


def _check_one_value(settings: Sequence[str], user: Sequence[str]) -> None:
    """A setting given as a flag (`--eps-high`, `--hp`) and again as a verl override must agree."""
    for o in settings:
        _, key, value = split_override(o)
        theirs = override_value(user, key)
        if theirs is not None and theirs != value:
            raise LaunchError(f"{key}={theirs} contradicts the flag that set it to {value} "
                              f"(--hp/--eps-* become {key}): give it once")


def _merge_user_overrides(generated: list[str], user: Sequence[str]) -> list[str]:
    """Append user overrides; `+key=v` for a key we already generated becomes `key=v` (Hydra would refuse)."""
    ours = override_keys(generated)
    fixed = []
    for o in user:
        prefix, key, _ = split_override(o)
        fixed.append(o[1:] if prefix == "+" and key in ours else o)
    return generated + fixed


def plan(
    algo: str,
    preset: str,
    overrides: Sequence[str] = (),
    out: Path | None = None,
    data_dir: Path = Path("data/verl"),
    steps: int | None = None,
    settings: Sequence[str] = (),
    check_inputs: bool = False,
) -> Plan:
    """Compose and validate the verl config of one run (nothing is launched or written).

    `settings`: the objective's settings given as flags, as overrides (hparams.hparam_overrides); a user
    override of the same key must agree. `check_inputs`: the model path and data files are checked before
    composition (a launch; a dry run skips them).
    """
    from dhpo_suite.train.verl_backend import cpu_platform
    from dhpo_suite.train.verl_backend.hparams import format_value
    from dhpo_suite.train.verl_backend.overrides import Paths, compose, hydra_overrides
    from dhpo_suite.train.verl_backend.seam import check_config
    from dhpo_suite.train.verl_backend.presets import algorithm_settings, get_preset
    from dhpo_suite.train.verl_backend.startup import StartupError, check

    from dhpo_suite.train.verl_backend.seam import VerlVersionError, check_verl_version

    try:
        check_verl_version()
    except VerlVersionError as e:
        raise LaunchError(str(e)) from None
    try:
        algo_settings = algorithm_settings(algo)
    except ValueError as e:
        raise LaunchError(f"--algo: {_first_line(e)}") from None
    try:
        p = get_preset(preset)
    except ValueError as e:
        raise LaunchError(f"--preset: {_first_line(e)}") from None
    run_dir = Path(out or Path("runs") / f"{algo}-{preset}-{time.strftime('%Y%m%d-%H%M%S')}").resolve()
    data_dir = Path(data_dir)
    paths = Paths(str((data_dir / "train.parquet").resolve()), str((data_dir / "val.parquet").resolve()),
                  str(run_dir), experiment=run_dir.name)
    if steps is not None and steps <= 0:
        raise LaunchError(f"--steps: must be > 0, got {steps}")
    _check_one_value(settings, overrides)
    if check_inputs:
        _check_inputs_early(p.model, paths, [*settings, *overrides])
    generated = hydra_overrides(p, algo_settings, paths) + list(settings)
    if steps is not None:
        generated.append(f"trainer.total_training_steps={steps}")
    if cpu_platform.requested():
        generated += cpu_platform.hydra_overrides()
    args = _merge_user_overrides(generated, overrides)
    try:
        cfg = compose(args)
    except Exception as e:  # hydra's override/config errors
        raise LaunchError(_override_error(e)) from None
    args += _derived(cfg, override_keys(overrides), p)
    try:
        resolution = check(cfg, override_keys(args), inputs=check_inputs)
    except StartupError as e:
        raise LaunchError(str(e)) from None
    if resolution is None:  # the user's loss_mode override named a loss that is not ours
        mode = cfg.actor_rollout_ref.actor.policy_loss.loss_mode
        raise LaunchError(f"actor_rollout_ref.actor.policy_loss.loss_mode={mode}: not a dhpo_suite loss; "
                          f"`dhpo-suite train --backend verl` trains dhpo_suite.<name> (--algo), with its telemetry "
                          f"and run directory; run verl's own losses with `python -m verl.trainer.main_ppo`")
    try:
        check_config(cfg)  # verl's validate_config and config dataclasses (ours ran first: startup.check)
    except Exception as e:  # verl's own checks
        raise LaunchError(f"verl config: {_first_line(e)}") from None
    # Hydra's job directory (main_ppo.log, the composed config) goes beside verl's checkpoints in the run
    # directory, not into ./outputs/<date>/<time> of wherever the command was started.
    hydra_dir = "hydra.run.dir=" + format_value(str(run_dir / "verl" / "hydra"))
    command = [sys.executable, "-m", "verl.trainer.main_ppo", *args, hydra_dir]
    return Plan(command, cfg, run_dir, algo, preset, resolution)


def _override_error(e: BaseException) -> str:
    """Hydra's composition error as one line with the full key (its root cause names only the last part)."""
    top = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    match = re.match(r"Could not override '([^']+)'", top)
    if not match:
        return f"verl override: {_first_line(e)}"
    key = match.group(1)
    parent, _, leaf = key.rpartition(".")
    siblings = _verl_keys(parent)
    near = difflib.get_close_matches(leaf, siblings, n=1)
    hint = f" (did you mean {parent + '.' if parent else ''}{near[0]}?)" if near else ""
    plus = re.search(r"use (\+\S+)", str(e))  # Hydra's own hint: the override with its leading +
    if leaf not in siblings:
        new_key = f"use {plus.group(1)}" if plus else "a key of your own needs a leading +"
        return f"verl override {key}: no such key in verl's config{hint}; {new_key}"
    return f"verl override {key}: {_first_line(e)}"


def _verl_keys(parent: str) -> list[str]:
    """The keys under `parent` in verl's generated full ppo_trainer config (no composition needed)."""
    from omegaconf import OmegaConf

    try:
        node: Any = OmegaConf.load(str(files("verl.trainer.config") / "_generated_ppo_trainer.yaml"))
        for part in parent.split(".") if parent else []:
            node = node.get(part)
        return [str(k) for k in node.keys()] if hasattr(node, "keys") else []
    except Exception:  # no hint is better than a second error
        return []


def _check_inputs_early(model: str, paths: Any, overrides: Sequence[str]) -> None:
    """Model path and data files as the overrides give them, before the (slow) composition."""
    from dhpo_suite.train.verl_backend.startup import StartupError, check_model_path

    key = "actor_rollout_ref.model.path"
    try:
        check_model_path(override_value(overrides, key) or model, key)
    except StartupError as e:
        raise LaunchError(str(e)) from None
    for name, default in (("train_files", paths.train_files), ("val_files", paths.val_files)):
        value = override_value(overrides, f"data.{name}") or default
        files = [f.strip(" '\"") for f in value.strip("[]").split(",")] if value.startswith("[") else [value]
        for f in files:
            if "://" not in f and not Path(f).expanduser().is_file():
                raise LaunchError(f"data.{name}: {f} not found (run `dhpo-suite data prepare` first)")


def _derived(cfg, user_keys: set[str], preset: Any) -> list[str]:
    """Settings that follow from the composed config (the user's overrides applied) unless the user set them;
    applied to `cfg` and returned as overrides for the command line."""
    from omegaconf import OmegaConf

    from dhpo_suite.train.verl_backend.overrides import length_settings

    lengths = length_settings(preset, int(cfg.data.max_prompt_length),
                              int(cfg.actor_rollout_ref.rollout.response_length))
    out = {k: v for k, v in lengths.items() if k not in user_keys}
    budget = "actor_rollout_ref.actor.policy_loss.telemetry.max_response_length"
    if budget not in user_keys:  # truncated = reached the rollout's budget, whatever it was set to
        out[budget] = int(cfg.actor_rollout_ref.rollout.response_length)
    total = cfg.trainer.total_training_steps
    if total is not None and "trainer.total_epochs" not in user_keys:
        # verl stops at whichever bound comes first; each epoch has >= 1 step, so `total` epochs never do.
        out["trainer.total_epochs"] = int(total)
    for key, value in out.items():
        OmegaConf.update(cfg, key, value, force_add=True)
    return [f"++{key}={value}" for key, value in out.items()]


def _open_run(pl: Plan):
    """Write the run directory's manifest (resolved config included); the workers append steps."""
    from dhpo_suite.runs import RunWriter
    from dhpo_suite.runs.format import manifest_path
    from dhpo_suite.train.verl_backend import run_manifest
    from dhpo_suite.train.verl_backend.seam import check_config

    actor = check_config(pl.config)["actor"]
    manifest = run_manifest.build(pl.config, actor, pl.resolution.hparams, pl.algorithm, preset=pl.preset)
    return RunWriter(pl.run_dir, manifest, resume=manifest_path(pl.run_dir).exists())


def run(
    algo: str,
    preset: str,
    overrides: Sequence[str] = (),
    dry_run: bool = False,
    out: Path | None = None,
    data_dir: Path = Path("data/verl"),
    steps: int | None = None,
    settings: Sequence[str] = (),
    resume: bool = False,
) -> int:
    """Launch (or with dry_run print) one verl run; returns the exit code (2 = bad input, one error line;
    128 + N when the launcher or verl's driver was ended by signal N). `resume`: `out` must hold a run (verl
    continues from its last checkpoint, as a relaunch on the same `out` always does)."""
    from omegaconf import OmegaConf

    from dhpo_suite.runs.lock import DirLock, LockHeld
    from dhpo_suite.train.verl_backend.startup import StartupError, check_data_files

    from dhpo_suite.runs.format import manifest_path

    lock = None
    try:
        if resume and not (out is not None and manifest_path(Path(out)).exists()):
            raise LaunchError(f"--resume: {out} holds no run to continue (no manifest.json)")
        if not dry_run and out is not None and Path(out).is_dir():  # a running launch: refused before composing
            DirLock(Path(out), create=False).acquire().release()
        pl = plan(algo, preset, overrides, out, data_dir, steps, settings, check_inputs=not dry_run)
        if dry_run:
            print(shlex.join(pl.command))
            print(OmegaConf.to_yaml(pl.config, resolve=True))
            print(pl.resolution.table())
            return 0
        check_data_files(pl.config)
        lock = DirLock(pl.run_dir).acquire()  # one writer: a second launch on this --out is refused
        writer = _open_run(pl)
    except BaseException as e:
        if lock is not None:  # nothing half-taken: no lock is left behind, whatever went wrong
            lock.release()
        if not isinstance(e, (LaunchError, StartupError, LockHeld)):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
    with lock:
        # verl's driver prints the loss's settings table once, at its start-up check (startup.on_validate).
        print(f"run directory: {pl.run_dir}\n{shlex.join(pl.command)}", flush=True)
        env = {"TENSORBOARD_DIR": str(pl.run_dir / "verl" / "tensorboard")}  # not ./tensorboard_log of the caller
        code, stopped_by = supervise(pl.command, env=env, lock_fd=lock.fileno(), run_dir=pl.run_dir)
        return finish(writer, code, stopped_by)


def finish(writer: Any, code: int, stopped_by: int | None) -> int:
    """Close the run's manifest after verl's driver ended; the launcher's exit code (128 + N for signal N, as
    a shell reports it, whether the launcher or the driver got the signal)."""
    if stopped_by is not None:
        name = signal.Signals(stopped_by).name
        writer.close("interrupted", f"stopped by {name}; verl's Ray job and its processes were ended")
        return 128 + stopped_by
    if code < 0:  # verl's driver itself was killed by signal -code
        writer.close("failed", f"verl's driver was killed by {signal.Signals(-code).name}")
        return 128 - code
    writer.close("completed" if code == 0 else "failed", None if code == 0 else f"verl exited with code {code}")
    return code
