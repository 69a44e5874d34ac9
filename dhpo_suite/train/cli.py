"""`dhpo-suite train`: the embedded CPU trainer (default) or the verl backend.

Options map one-to-one onto `TrainConfig` fields (help text = the field's docstring). The objective's
settings have one name each, its keyword: `--hp eps_low=0.1` (repeatable; any keyword of the objective)
or, for the settings that have one, the same name as a flag (`--eps-low 0.1`). Both backends take them:
with `--backend verl` they become verl overrides (verl_backend/hparams.py; an extra `key=value` argument
for the same key must agree). The extra `key=value` arguments are forwarded as Hydra overrides to `dhpo_suite.train.verl_backend.launch.run` with
`--algo`, `--preset`, `--out`, `--dry-run`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn, Optional

import typer
from rich.console import Console

from dhpo_suite.train.embedded.config import NAMED_HPARAMS, ConfigError, TrainConfig

__all__ = ["register"]

_DOC = TrainConfig.field_docs()
_VERL_FORWARDED = ("algo", "out", "backend", "logger", "steps", "hparams", *NAMED_HPARAMS)
_FLAGS = {"hparams": "--hp"}  # fields whose option is not --<field-name>


def _opt(field: str, *names: str) -> Any:
    return typer.Option(getattr(TrainConfig(), field), *names, help=_DOC[field], show_default=True)


def register(app: typer.Typer) -> None:
    @app.command(
        help="Train with DHPO or a baseline. No arguments: the tiny model on arithmetic with DHPO-E, offline on "
             "a CPU in a few minutes. Extra key=value arguments go to verl (--backend verl).",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def train(
        ctx: typer.Context,
        algo: str = _opt("algo", "--algo"),
        clip: Optional[str] = _opt("clip", "--clip"),
        eps_low: Optional[float] = _opt("eps_low", "--eps-low"),
        eps_high: Optional[float] = _opt("eps_high", "--eps-high"),
        seq_eps_low: Optional[float] = _opt("seq_eps_low", "--seq-eps-low"),
        seq_eps_high: Optional[float] = _opt("seq_eps_high", "--seq-eps-high"),
        loss_agg_mode: Optional[str] = _opt("loss_agg_mode", "--loss-agg-mode"),
        hparams: Optional[list[str]] = typer.Option(None, "--hp", metavar="KEY=VALUE", help=_DOC["hparams"]),
        group_size: int = _opt("group_size", "--group-size", "-G"),
        prompts_per_step: int = _opt("prompts_per_step", "--prompts-per-step"),
        ppo_epochs: int = _opt("ppo_epochs", "--ppo-epochs"),
        mini_batches: int = _opt("mini_batches", "--mini-batches"),
        micro_batch: Optional[int] = _opt("micro_batch", "--micro-batch"),
        lr: float = _opt("lr", "--lr"),
        warmup_steps: int = _opt("warmup_steps", "--warmup-steps"),
        weight_decay: float = _opt("weight_decay", "--weight-decay"),
        max_grad_norm: float = _opt("max_grad_norm", "--max-grad-norm"),
        steps: int = _opt("steps", "--steps"),
        seed: int = _opt("seed", "--seed"),
        model: str = _opt("model", "--model"),
        task: str = _opt("task", "--task"),
        out: Optional[str] = _opt("out", "--out"),
        resume: bool = _opt("resume", "--resume"),
        max_new_tokens: Optional[int] = _opt("max_new_tokens", "--max-new-tokens"),
        temperature: float = _opt("temperature", "--temperature"),
        checkpoint_every: int = _opt("checkpoint_every", "--checkpoint-every"),
        eval_every: int = _opt("eval_every", "--eval-every"),
        eval_prompts: int = _opt("eval_prompts", "--eval-prompts"),
        train_pool: int = _opt("train_pool", "--train-pool"),
        sft_target: float = _opt("sft_target", "--sft-target"),
        sft_max_steps: int = _opt("sft_max_steps", "--sft-max-steps"),
        chunk_tokens: int = _opt("chunk_tokens", "--chunk-tokens"),
        device: str = _opt("device", "--device"),
        precision: str = _opt("precision", "--precision"),
        threads: int = _opt("threads", "--threads"),
        grader_workers: int = _opt("grader_workers", "--grader-workers"),
        reward_unmarked: float = _opt("reward_unmarked", "--reward-unmarked"),
        backend: str = _opt("backend", "--backend"),
        logger: str = _opt("logger", "--logger"),
        preset: str = typer.Option("qwen3-1.7b", "--preset", help="verl backend: cluster preset."),
        dry_run: bool = typer.Option(False, "--dry-run", help="verl backend: print the command and config only."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar (logs only)."),
    ) -> None:
        values = {k: v for k, v in locals().items() if k in _DOC}
        if resume and out and "algo" not in _given(ctx):  # the run's objective: its settings are checked against it
            values["algo"] = _stored_algo(out) or algo
        values["hparams"] = _parse_hp(values["algo"], hparams or [])
        try:
            cfg = TrainConfig(**values).validate()
        except ConfigError as e:
            _fail(_flag(e))
        if cfg.backend == "verl":
            verl_steps = cfg.steps if "steps" in _given(ctx) else None  # else the preset decides
            raise typer.Exit(_run_verl(cfg, preset, dry_run, list(ctx.args), verl_steps))
        if ctx.args:
            _fail(f"unknown option(s) for the embedded backend: {' '.join(ctx.args)} (see dhpo-suite train --help)")
        if dry_run:
            _fail("--dry-run applies to --backend verl only")
        _run_embedded(cfg, show_progress=not no_progress, explicit=_given(ctx))


def _given(ctx: typer.Context) -> frozenset[str]:
    """Config fields the user gave (command line or environment), defaults or not: on --resume each one must
    match the stored run."""
    given = ("COMMANDLINE", "ENVIRONMENT")  # ParameterSource names (typer vendors click)
    return frozenset(k for k in _DOC if getattr(ctx.get_parameter_source(k), "name", None) in given)


def _stored_algo(out: str) -> str | None:
    """The objective of the run in `out` (None when there is no readable run: resuming reports that)."""
    from dhpo_suite.runs import RunFormatError, read_manifest

    try:
        return read_manifest(Path(out).expanduser()).algorithm
    except (RunFormatError, OSError):
        return None


def _parse_hp(algo: str, pairs: list[str]) -> dict[str, Any]:
    """`--hp key=value ...` typed by the objective's signature (an unknown --algo is reported by validate)."""
    from dhpo_suite.train.objectives import OBJECTIVES
    from dhpo_suite.train.objectives.registry import parse_hparams

    if not pairs or algo not in OBJECTIVES:
        return {}
    try:
        return parse_hparams(algo, pairs)
    except ValueError as e:
        _fail(f"--hp: {e}")


def _flag(e: ConfigError) -> str:
    """A ConfigError as the user typed it: `--group-size: must be ...`."""
    return f"{_FLAGS.get(e.field, '--' + e.field.replace('_', '-'))}: {e.reason}"


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def _run_embedded(cfg: TrainConfig, show_progress: bool, explicit: frozenset[str]) -> None:
    from dhpo_suite.models.local import ModelDirError
    from dhpo_suite.train.embedded import ConfigError, train

    console = Console(stderr=True)
    try:
        train(cfg, log=lambda s: console.print(s, markup=False, highlight=False, soft_wrap=True),
              show_progress=show_progress, explicit=explicit)
    except (ConfigError, ModelDirError) as e:
        _fail(_flag(e) if isinstance(e, ConfigError) else str(e))


def _run_verl(cfg: TrainConfig, preset: str, dry_run: bool, extra: list[str], steps: int | None = None) -> int:
    """Forward to the verl backend; embedded-only options set away from their defaults are an error."""
    default = TrainConfig()
    embedded_only = [k for k in _DOC if k not in _VERL_FORWARDED and getattr(cfg, k) != getattr(default, k)]
    if embedded_only:
        names = ", ".join("--" + k.replace("_", "-") for k in embedded_only)
        _fail(f"{names}: embedded-backend option(s); with --backend verl pass verl overrides as key=value "
              f"arguments (see docs/verl.md)")
    from dhpo_suite.train.verl_backend.hparams import hparam_overrides
    from dhpo_suite.train.verl_backend.launch import run

    settings = hparam_overrides(cfg.objective_hparams())  # checked by cfg.validate(); an extra must agree
    return run(algo=cfg.algo, preset=preset, overrides=_verl_logger(cfg.logger) + extra, settings=settings,
               dry_run=dry_run, out=Path(cfg.out) if cfg.out else None, steps=steps)


def _verl_logger(spec: str) -> list[str]:
    """--logger for verl: our destinations join verl's console in `trainer.logger`, and verl's Tracking then
    mirrors our step telemetry into them (dhpo_suite/tracking/verl_tracking.py). A user's own
    trainer.logger=... (given after) wins."""
    from dhpo_suite.tracking.mirrors import parse_loggers

    names = parse_loggers(spec)
    return [f"trainer.logger=[console,{','.join(names)}]"] if names else []
