"""`dhpo-suite sweep`: a grid of `dhpo-suite train` runs (dhpo_suite.train.sweep), in parallel, resumably. Its
options are `SweepArgs`' fields and `train`'s (dhpo_suite.config_cli); `dhpo-suite compare` reads the result."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import click
import typer
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from dhpo_suite.config_cli import Spell, Values, config_command, flag, to_argv
from dhpo_suite.train import sweep as sw
from dhpo_suite.train.cli import SPELL as TRAIN_SPELL
from dhpo_suite.train.cli import interrupt_on_termination, interrupted_rc
from dhpo_suite.train.embedded.config import MAX_SEED, ConfigError, TrainConfig

__all__ = ["SweepArgs", "register"]


@dataclass(frozen=True)
class SweepArgs:
    """The sweep's own options; every other option is `dhpo-suite train`'s, passed to each run."""

    out: Path
    """Sweep directory (one run directory per cell, sweep.json, logs/)."""
    algos: str | None = None
    """Comma-separated objectives, e.g. grpo,gspo,gmpo,cispo,dhpo-a,dhpo-e. Omit to continue a stored sweep."""
    clip: str | None = None
    """DHPO clip modes to cross with DHPO objectives: branch, unified or branch,unified (default: the
    objective's, branch)."""
    seeds: str | None = None
    """Number of seeds N (0..N-1) or a comma list."""
    workers: int = 0
    """Parallel runs (one torch thread each); 0: one per core."""
    no_progress: bool = False
    """No progress bar (one line per finished run)."""
    prereg: Path | None = None
    """Pre-registration JSON (contrasts, family, margins, primary metric; docs/sweep.md): copied to
    OUT/prereg.json and its sha256 recorded before any run; compare's verdicts come only from it."""


SWEEP_SETS = ("algo", "clip", "seed", "out", "resume", "threads", "backend")
"""Train options the sweep sets for each run (the grid's cell, its directory, one thread, the embedded trainer)."""
SPELL = {**TRAIN_SPELL, "out": Spell(argument=True)}
SWEEP_FIELDS = frozenset(f.name for f in dataclasses.fields(SweepArgs))


def register(app: typer.Typer) -> None:
    @app.command(
        help="Run an algorithm x clip x seed grid of `dhpo-suite train` runs under OUT, in parallel, resumably "
             "(re-run the same command, or `dhpo-suite sweep OUT`, to continue). The train options are passed "
             "to every run, e.g. --steps 40 --ppo-epochs 2 --mini-batches 4.",
    )
    @config_command(SweepArgs, (TrainConfig, SWEEP_SETS), spell=SPELL)
    def sweep(ctx: typer.Context, v: Values) -> None:
        a = SweepArgs(**v.of(SweepArgs))
        if a.workers < 0:  # before the sweep directory is read or made
            _fail(f"--workers: must be an integer >= 0 (0: one per core), got {a.workers}")
        train_args = to_argv(ctx.command.params, v.values, keep=lambda name: name in v.given - SWEEP_FIELDS)
        try:
            requested, registration = None, None
            if v.given - {"out", "workers", "no_progress"}:
                requested = _requested(a.algos, a.clip, a.seeds, v, train_args)
                if a.prereg is not None:
                    registration, sha256 = _read_prereg(a.prereg)
                    requested = dataclasses.replace(requested, prereg_sha256=sha256)
            grid = sw.load_or_create(a.out, requested, registration, canonical=lambda t: _canonical(ctx, t))
            held = sw.lock(a.out)  # a second sweep on OUT is refused here, before any log is touched
        except sw.SweepError as e:
            _fail(str(e))
        cells = grid.cells()
        n = min(a.workers or sw.default_workers(), sw.default_workers(), max(len(cells), 1))  # no idle processes
        typer.echo(f"sweep {a.out}: {len(cells)} runs ({', '.join(grid.algos)}; clip {','.join(grid.clips) or '-'}; "
                   f"seeds {','.join(map(str, grid.seeds))}; {grid.steps} steps each), {n} at a time", err=True)
        interrupt_on_termination()  # SIGTERM stops the cells as Ctrl-C does (run_sweep), not by PDEATHSIG's SIGKILL
        try:
            with _Bar(not a.no_progress) as bar:
                result = sw.run_sweep(a.out, grid, workers=n, on_update=bar.update, held=held)
        except KeyboardInterrupt as e:
            typer.echo(f"interrupted ({str(e) or 'SIGINT'}): the running cells were stopped and keep their last "
                       f"checkpoints; the same command continues the sweep", err=True)
            raise typer.Exit(interrupted_rc(e)) from None
        failed = {k: v for k, v in result.items() if v.startswith("failed")}
        skipped = sum(v == "skipped" for v in result.values())
        typer.echo(f"done: {len(result) - len(failed) - skipped} ran, {skipped} already complete, {len(failed)} "
                   f"failed. Compare them: dhpo-suite compare {a.out}", err=True)
        for name, why in failed.items():
            typer.echo(f"error: {name}: {why}", err=True)
        raise typer.Exit(1 if failed else 0)


def _requested(algos, clip, seeds, v: Values, train_args: list[str]):
    """The requested Sweep, with every option checked before any run starts."""
    if algos is None or seeds is None:
        raise sw.SweepError("--algos and --seeds are both needed to start a sweep")
    names = tuple(a.strip() for a in algos.split(",") if a.strip())
    clips = tuple(c.strip() for c in clip.split(",") if c.strip()) if clip else ()
    try:
        seed_list = tuple(range(int(seeds))) if "," not in seeds else tuple(int(s) for s in seeds.split(","))
    except ValueError:
        raise sw.SweepError(f"--seeds: expected a count or a comma list of integers, got {seeds!r}") from None
    if seed_list and max(seed_list) > MAX_SEED:  # each run checks its own seed only when it starts
        raise sw.SweepError(f"--seeds: {max(seed_list)} is past the largest seed, {MAX_SEED}")
    if not names or not seed_list or len(set(seed_list)) != len(seed_list) or min(seed_list) < 0:
        raise sw.SweepError(f"--algos/--seeds: need at least one objective and distinct seeds >= 0 "
                            f"(got {algos!r}, {seeds!r})")
    bad = [c for c in clips if c not in ("branch", "unified")]
    if bad:
        raise sw.SweepError(f"--clip: {bad[0]!r} is not one of: branch, unified")
    if clips and not any(a.startswith("dhpo") for a in names):
        raise sw.SweepError("--clip: only DHPO objectives have a clip mode; none is in --algos")
    _check_train_options(names, clips, seed_list[0], v.of(TrainConfig))
    return sw.Sweep(names, clips, seed_list, tuple(train_args), int(v["steps"]))


def _canonical(ctx: typer.Context, tokens: tuple[str, ...]) -> tuple[str, ...]:
    """Stored train options as this command would write them now (their order and spelling normalised)."""
    try:
        parsed = ctx.command.make_context("sweep", ["OUT", *tokens], resilient_parsing=True)
    except click.ClickException:
        return tuple(tokens)
    given = {p.name for p in ctx.command.params if p.name in parsed.params
             and getattr(parsed.get_parameter_source(p.name), "name", None) == "COMMANDLINE"}
    return tuple(to_argv(ctx.command.params, parsed.params, keep=lambda name: name in given - SWEEP_FIELDS))


def _read_prereg(path: Path) -> tuple[bytes, str]:
    """The bytes of the pre-registration file, checked (every field) before anything is written, and their
    digest. Imported here: the checks read pandas, which `dhpo-suite --help` must not load."""
    from dhpo_suite.runs.format import RunFormatError
    from dhpo_suite.runs.json_text import check_depth
    from dhpo_suite.science.compare import METRIC_DOCS
    from dhpo_suite.science.prereg import PreregError, digest, parse

    try:
        data = path.read_bytes()
        check_depth(data.decode("utf-8", errors="replace"), path)  # the JSON decoder recursed once per bracket
        parse(data, str(path), tuple(METRIC_DOCS))
    except OSError as e:
        raise sw.SweepError(f"--prereg: {path}: {e.strerror}") from None
    except (PreregError, RunFormatError) as e:
        raise sw.SweepError(f"--prereg: {e}") from None
    return data, digest(data)


def _check_train_options(algos, clips, seed: int, values: dict) -> None:
    """Validate one train config per objective and clip mode, as `dhpo-suite train` would (errors name the
    option)."""
    from dhpo_suite.train.objectives.registry import parse_hparams

    hp_pairs = list(values.pop("hparams", None) or [])  # `--hp key=value`: typed per objective, as train does
    for algo in algos:
        for clip in (clips if algo.startswith("dhpo") and clips else (None,)):
            try:
                hparams = parse_hparams(algo, hp_pairs) if hp_pairs else {}
            except ValueError as e:
                raise sw.SweepError(f"--hp: {e}") from None
            try:
                TrainConfig(**{**values, "hparams": hparams, "algo": algo, "clip": clip, "seed": seed}).validate()
            except ConfigError as e:
                raise sw.SweepError(f"{flag(e.field, SPELL)}: {e.reason}") from None


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


class _Bar:
    """A rich progress bar over the grid's steps, with runs finished / total and the runs in flight; disabled, one
    line per finished run."""

    def __init__(self, enabled: bool) -> None:
        self._p = Progress(TextColumn("[bold]sweep[/] {task.fields[runs]}"), BarColumn(),
                           TextColumn("{task.completed}/{task.total} steps"), TimeElapsedColumn(),
                           TimeRemainingColumn(), TextColumn("{task.fields[info]}"), disable=not enabled)
        self._task, self._finished = None, 0

    def __enter__(self) -> "_Bar":
        self._p.start()
        return self

    def update(self, s: dict) -> None:
        runs = f"{s['finished']}/{s['cells']} runs"
        info = f"running: {', '.join(s['running'])}" + (f"  [red]{s['failed']} failed[/]" if s["failed"] else "")
        if self._p.disable:
            if s["finished"] != self._finished:
                typer.echo(f"sweep: {runs}, {s['steps']}/{s['total_steps']} steps; {info}", err=True)
                self._finished = s["finished"]
            return
        if self._task is None:
            self._task = self._p.add_task("sweep", total=s["total_steps"], runs=runs, info=info)
        self._p.update(self._task, completed=s["steps"], runs=runs, info=info)

    def __exit__(self, *exc) -> None:
        self._p.stop()
