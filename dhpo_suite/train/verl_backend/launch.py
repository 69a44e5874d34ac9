"""`dhpo-suite train --backend verl`: compose verl's config from a preset and an algorithm, then launch verl.

The trainer's CLI (dhpo_suite/train/cli.py) forwards to `run`:

    exit_code = launch.run(algo="dhpo-e", preset="qwen3-4b", overrides=["trainer.nnodes=2"],
                           dry_run=False, out=Path("runs/dhpo-e-qwen3-4b"))

`run` never raises for bad input: it prints one `error: ...` line to stderr and returns 2. `plan` is the
same without printing (raises LaunchError), for programs and tests.

What happens: overrides are generated from the frozen Preset and AlgorithmSettings (overrides.py), the
user's overrides are appended, verl's own `ppo_trainer` config is composed with hydra and checked with
verl's validation and dataclasses; the run directory gets its manifest (with the resolved config); then
`python -m verl.trainer.main_ppo <overrides>` runs (Ray: a local instance, or the cluster `ray start`
made, see docs/verl.md). Workers stream telemetry into the run directory; when verl exits the manifest's
status is closed: completed, failed (non-zero exit) or interrupted (SIGTERM/SIGINT, see `supervise`).

Steps: `steps` (`--steps N`), the preset's `total_training_steps` or a user override set
`trainer.total_training_steps`; whenever one is set, `trainer.total_epochs` is raised to it (unless the
user set it), because verl's loop also stops at the end of `total_epochs` and an epoch holds at least one
step. verl saves (and the plugin exports to `<run>/checkpoints/`) at every `save_freq` and at the last step.
With `VERL_PLATFORM=cpu` the CPU platform's overrides come before the user's (cpu_platform.py).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

__all__ = ["LaunchError", "Plan", "plan", "run", "default_run_dir", "supervise", "RUN_MARKER"]

RUN_MARKER = "DHPO_SUITE_VERL_RUN"
"""Environment variable that every process of one launch inherits (verl's driver, Ray, its workers)."""
GRACE_SECONDS = 30.0
"""After SIGTERM/SIGINT, how long verl's driver gets to stop its Ray job before everything is killed."""


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


def _keys(overrides: Sequence[str]) -> set[str]:
    return {o.lstrip("+~").split("=", 1)[0] for o in overrides}


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
    steps: int | None = None,
) -> Plan:
    """Compose and validate the verl config of one run (nothing is launched or written)."""
    from dhpo_suite.train.verl_backend import cpu_platform
    from dhpo_suite.train.verl_backend.overrides import Paths, compose, format_value, hydra_overrides, validate
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
    if steps is not None and steps <= 0:
        raise LaunchError(f"--steps: must be > 0, got {steps}")
    generated = hydra_overrides(p, settings, paths)
    if steps is not None:
        generated.append(f"trainer.total_training_steps={steps}")
    if cpu_platform.requested():
        generated += cpu_platform.hydra_overrides()
    args = _merge_user_overrides(generated, overrides)
    try:
        cfg = compose(args)
    except Exception as e:  # hydra's override/config errors
        raise LaunchError(f"verl override: {_first_line(e)}") from None
    args += _derived(cfg, _keys(overrides))
    try:
        validate(cfg)
    except Exception as e:  # verl's own checks, our knob checks
        raise LaunchError(f"verl config: {_first_line(e)}") from None
    # Hydra's job directory (main_ppo.log, the composed config) goes beside verl's checkpoints in the run
    # directory, not into ./outputs/<date>/<time> of wherever the command was started.
    hydra_dir = "hydra.run.dir=" + format_value(str(run_dir / "verl" / "hydra"))
    command = [sys.executable, "-m", "verl.trainer.main_ppo", *args, hydra_dir]
    return Plan(command, cfg, run_dir, algo, preset)


def _derived(cfg, user_keys: set[str]) -> list[str]:
    """Settings that follow from the composed config unless the user set them; applied to `cfg` and returned
    as overrides for the command line."""
    from omegaconf import OmegaConf

    out = {}
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


def _check_inputs(cfg) -> None:
    import pyarrow.parquet as pq

    for key in ("train_files", "val_files"):
        for f in [cfg.data[key]] if isinstance(cfg.data[key], str) else list(cfg.data[key]):
            if not Path(f).exists():
                raise LaunchError(f"data.{key}: {f} not found (run `dhpo-suite data prepare` first)")
    files = [cfg.data.train_files] if isinstance(cfg.data.train_files, str) else list(cfg.data.train_files)
    rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    if rows < cfg.data.train_batch_size:  # verl would divide by zero steps per epoch
        raise LaunchError(f"data.train_files: {rows} problems, fewer than data.train_batch_size="
                          f"{cfg.data.train_batch_size} (one step's prompts)")


def _open_run(pl: Plan):
    """Write the run directory's manifest (resolved config included); the workers append steps."""
    from omegaconf import OmegaConf

    from dhpo_suite.runs import Manifest, RunWriter, TelemetrySpec
    from dhpo_suite.runs.format import manifest_path
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
    return RunWriter(pl.run_dir, manifest, resume=manifest_path(pl.run_dir).exists())


def run(
    algo: str,
    preset: str,
    overrides: Sequence[str] = (),
    dry_run: bool = False,
    out: Path | None = None,
    data_dir: Path = Path("data/verl"),
    steps: int | None = None,
) -> int:
    """Launch (or with dry_run print) one verl run; returns the exit code (2 = bad input, one error line;
    128 + signal number when stopped by SIGTERM/SIGINT)."""
    from omegaconf import OmegaConf

    try:
        pl = plan(algo, preset, overrides, out, data_dir, steps)
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
    code, stopped_by = supervise(pl.command)
    if stopped_by is not None:
        name = signal.Signals(stopped_by).name
        writer.close("interrupted", f"stopped by {name}; verl's Ray job and its processes were ended")
        return 128 + stopped_by
    writer.close("completed" if code == 0 else "failed", None if code == 0 else f"verl exited with code {code}")
    return code


def supervise(command: Sequence[str], grace: float = GRACE_SECONDS) -> tuple[int, int | None]:
    """Run verl's driver to its end; (exit code, the signal that stopped it or None).

    The driver runs in its own session with `RUN_MARKER` set, so every process of the launch (the driver,
    the Ray instance it starts, Ray's workers) carries the marker. SIGTERM or SIGINT to this process is
    passed on as SIGINT, on which verl's driver unwinds (its `finally` closes TransferQueue, Ray shuts down
    at exit); after `grace` seconds whatever is left is killed. In every case, processes still carrying
    the marker once the driver is gone are ended (SIGTERM, then SIGKILL).
    """
    marker = uuid.uuid4().hex
    proc = subprocess.Popen(list(command), env={**os.environ, RUN_MARKER: marker}, start_new_session=True)
    stopped: list[int] = []

    def on_signal(signum, frame):
        if not stopped:
            stopped.append(signum)
            _signal(proc.pid, signal.SIGINT)

    handled = (signal.SIGTERM, signal.SIGINT) if threading.current_thread() is threading.main_thread() else ()
    previous = {s: signal.signal(s, on_signal) for s in handled}  # signals reach the main thread only
    deadline = None
    try:
        while True:
            try:
                code = proc.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if stopped:
                    deadline = deadline or time.monotonic() + grace
                    if time.monotonic() > deadline:  # the driver did not stop in time
                        _signal(-proc.pid, signal.SIGKILL)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        end_marked_processes(marker)
    return code, (stopped[0] if stopped else None)


def _signal(pid: int, sig: int) -> None:
    """os.kill, or os.killpg for a negative pid; a process that is already gone is fine."""
    try:
        os.killpg(-pid, sig) if pid < 0 else os.kill(pid, sig)
    except ProcessLookupError:
        pass


def marked_processes(marker: str) -> list:
    """Live processes whose environment holds RUN_MARKER=marker (psutil.Process list)."""
    import psutil

    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(RUN_MARKER) == marker:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


def end_marked_processes(marker: str, wait: float = 10.0) -> None:
    """SIGTERM every process of the launch `marker`, SIGKILL those alive `wait` seconds later."""
    import psutil

    procs = marked_processes(marker)
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=wait)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=wait)
