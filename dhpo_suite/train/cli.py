"""`dhpo-suite train`: the embedded CPU trainer (default) or the verl backend.

Options are generated from `TrainConfig`'s and `TrainCommand`'s fields (dhpo_suite.config_cli). The objective's
settings have one name each, its keyword: `--hp eps_low=0.1` (repeatable; any keyword of the objective)
or, for the settings that have one, the same name as a flag (`--eps-low 0.1`). Both backends take them:
with `--backend verl` they become verl overrides (verl_backend/hparams.py; an extra `key=value` argument
for the same key must agree). The extra `key=value` arguments are forwarded as Hydra overrides to
`dhpo_suite.train.verl_backend.launch.run` with `--algo`, `--preset`, `--out`, `--dry-run`.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console

from dhpo_suite.config_cli import Spell, Values, config_command, flag
from dhpo_suite.train.embedded.config import NAMED_HPARAMS, ConfigError, TrainConfig

__all__ = ["SPELL", "TrainCommand", "interrupt_on_termination", "interrupted_rc", "register"]


@dataclass(frozen=True)
class TrainCommand:
    """The command's own options (not part of a run's configuration)."""

    preset: str = "qwen3-1.7b"
    """verl backend: cluster preset (dhpo_suite/train/verl_backend/presets)."""
    dry_run: bool = False
    """verl backend: print the command and config only."""
    no_progress: bool = False
    """No progress bar (logs only)."""


def _objective_names() -> tuple[str, ...]:
    from dhpo_suite.train.objectives.registry import objective_names  # imports torch: when parsed, not at --help

    return objective_names()


def _task_names() -> tuple[str, ...]:
    from dhpo_suite.tasks import TASKS

    return tuple(TASKS)


_VERL_FORWARDED = ("algo", "out", "backend", "logger", "steps", "hparams", "resume", *NAMED_HPARAMS)
SPELL = {
    "algo": Spell(choices=_objective_names),
    "task": Spell(choices=_task_names, listed=_task_names),
    "backend": Spell(choices=lambda: ("embedded", "verl")),
    "hparams": Spell(names=("--hp",), repeat=True),
    "group_size": Spell(names=("-G",)),
}
"""How the fields that need more than `--field-name` are spelled (dhpo_suite.config_cli)."""


def register(app: typer.Typer) -> None:
    @app.command(
        help="Train with DHPO or a baseline. No arguments: the tiny model on arithmetic with DHPO-E, offline on "
             "a CPU in a few minutes. Extra key=value arguments go to verl (--backend verl).",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    @config_command(TrainConfig, TrainCommand, spell=SPELL)
    def train(ctx: typer.Context, v: Values) -> None:
        values, cmd = v.of(TrainConfig), TrainCommand(**v.of(TrainCommand))
        given = v.given & values.keys()
        if values["resume"] and values["out"] and "algo" not in given:  # its settings are checked against it
            values["algo"] = _stored_algo(values["out"]) or values["algo"]
        values["hparams"] = _parse_hp(values["algo"], values["hparams"] or [])
        try:
            cfg = TrainConfig(**values).validate()
        except ConfigError as e:
            _fail(_flag(e))
        if cfg.backend == "verl":
            verl_steps = cfg.steps if "steps" in given else None  # else the preset decides
            raise typer.Exit(_run_verl(cfg, cmd.preset, cmd.dry_run, list(ctx.args), verl_steps))
        if ctx.args:
            _fail(f"unknown option(s) for the embedded backend: {' '.join(ctx.args)} (see dhpo-suite train --help)")
        if cmd.dry_run:
            _fail("--dry-run applies to --backend verl only")
        _run_embedded(cfg, show_progress=not cmd.no_progress, explicit=frozenset(given))


def _stored_algo(out: str) -> str | None:
    """The objective of the run in `out` (None when there is no readable run: resuming reports that)."""
    from dhpo_suite.runs import RunFormatError, read_manifest

    try:
        return read_manifest(Path(out).expanduser()).algorithm
    except (RunFormatError, OSError):
        return None


def _parse_hp(algo: str, pairs: list[str]) -> dict[str, Any]:
    """`--hp key=value ...` typed by the objective's signature (an unknown --algo is reported by validate)."""
    from dhpo_suite.train.objectives.registry import objective_names, parse_hparams

    if not pairs or algo not in objective_names():
        return {}
    try:
        return parse_hparams(algo, pairs)
    except ValueError as e:
        _fail(f"--hp: {e}")


def _flag(e: ConfigError) -> str:
    """A ConfigError as the user typed it: `--group-size: must be ...`."""
    return f"{flag(e.field, SPELL)}: {e.reason}"


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _run_embedded(cfg: TrainConfig, show_progress: bool, explicit: frozenset[str]) -> None:
    from dhpo_suite.models.local import ModelDirError
    from dhpo_suite.train.embedded import train
    from dhpo_suite.train.embedded.loop import TrainingDiverged

    console = Console(stderr=True)
    interrupt_on_termination()
    try:
        train(cfg, log=lambda s: console.print(s, markup=False, highlight=False, soft_wrap=True),
              show_progress=show_progress, explicit=explicit)
    except (ConfigError, ModelDirError, TrainingDiverged) as e:
        _fail(_flag(e) if isinstance(e, ConfigError) else str(e))
    except KeyboardInterrupt as e:
        out = cfg.out or "RUN_DIR"  # without --out, the directory the run printed when it started
        typer.echo(f"interrupted ({str(e) or 'SIGINT'}): the run keeps its last checkpoint; continue with "
                   f"`dhpo-suite train --resume --out {out}`", err=True)
        raise typer.Exit(interrupted_rc(e)) from None


def interrupted_rc(e: KeyboardInterrupt) -> int:
    """The shell's exit status for a process ended by the signal an interrupt names (Ctrl-C: SIGINT, 130)."""
    return 128 + signal.Signals[str(e) or "SIGINT"].value


def interrupt_on_termination() -> None:
    """SIGTERM and SIGHUP (a scheduler's stop, a closed terminal, `sweep` stopping its cells) unwind the run as
    Ctrl-C does, so its manifest ends "interrupted", naming the signal, instead of staying "running" (the
    default action kills the process before anything can close the run)."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(signal.Signals(signum).name)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)


def _run_verl(cfg: TrainConfig, preset: str, dry_run: bool, extra: list[str], steps: int | None = None) -> int:
    """Forward to the verl backend; embedded-only options set away from their defaults are an error."""
    default = TrainConfig()
    embedded_only = [f.name for f in fields(TrainConfig)
                     if f.name not in _VERL_FORWARDED and getattr(cfg, f.name) != getattr(default, f.name)]
    if embedded_only:
        names = ", ".join(flag(k, SPELL) for k in embedded_only)
        _fail(f"{names}: embedded-backend option(s); with --backend verl pass verl overrides as key=value "
              f"arguments (see docs/verl.md)")
    from dhpo_suite.train.verl_backend.hparams import hparam_overrides
    from dhpo_suite.train.verl_backend.launch import run

    settings = hparam_overrides(cfg.objective_hparams())  # checked by cfg.validate(); an extra must agree
    return run(algo=cfg.algo, preset=preset, overrides=_verl_logger(cfg.logger) + extra, settings=settings,
               dry_run=dry_run, out=Path(cfg.out) if cfg.out else None, steps=steps, resume=cfg.resume)


def _verl_logger(spec: str) -> list[str]:
    """--logger for verl: our destinations join verl's console in `trainer.logger`, and verl's Tracking then
    mirrors our step telemetry into them (dhpo_suite/tracking/verl_tracking.py). A user's own
    trainer.logger=... (given after) wins."""
    from dhpo_suite.tracking.mirrors import parse_loggers

    names = parse_loggers(spec)
    return [f"trainer.logger=[console,{','.join(names)}]"] if names else []
