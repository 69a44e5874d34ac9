"""`dhpo-suite sweep` (a grid of training runs, dhpo_suite.train.sweep) and `dhpo-suite compare` (their
statistics across seeds, dhpo_suite.science.compare)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import click
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from dhpo_suite.config_cli import Spell, Values, config_command, flag, to_argv
from dhpo_suite.runs.out_paths import dir_problem, file_problem
from dhpo_suite.runs.safe_write import atomic_file, staged_dir
from dhpo_suite.science.prereg import PreregError, digest, parse
from dhpo_suite.train import sweep as sw
from dhpo_suite.train.cli import SPELL as TRAIN_SPELL
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
                    registration = _read_prereg(a.prereg)
                    requested = dataclasses.replace(requested, prereg_sha256=digest(registration))
            grid = sw.load_or_create(a.out, requested, registration, canonical=lambda t: _canonical(ctx, t))
            held = sw.lock(a.out)  # a second sweep on OUT is refused here, before any log is touched
        except sw.SweepError as e:
            _fail(str(e))
        cells = grid.cells()
        n = min(a.workers or sw.default_workers(), sw.default_workers(), max(len(cells), 1))  # no idle processes
        typer.echo(f"sweep {a.out}: {len(cells)} runs ({', '.join(grid.algos)}; clip {','.join(grid.clips) or '-'}; "
                   f"seeds {','.join(map(str, grid.seeds))}; {grid.steps} steps each), {n} at a time", err=True)
        with _Bar(not a.no_progress) as bar:
            result = sw.run_sweep(a.out, grid, workers=n, on_update=bar.update, held=held)
        failed = {k: v for k, v in result.items() if v.startswith("failed")}
        skipped = sum(v == "skipped" for v in result.values())
        typer.echo(f"done: {len(result) - len(failed) - skipped} ran, {skipped} already complete, {len(failed)} "
                   f"failed. Compare them: dhpo-suite compare {a.out}", err=True)
        for name, why in failed.items():
            typer.echo(f"error: {name}: {why}", err=True)
        raise typer.Exit(1 if failed else 0)

    @app.command(help="Per label: mean and 95 % t-interval across seeds of final held-out reward, reward AUC, "
                      "late entropy and length, collapse step, residual sd. With a pre-registration (prereg.json, "
                      "`sweep --prereg`): manipulation checks, then each contrast's paired t-interval, t-test and "
                      "Holm-adjusted p, exact sign-flip p, TOST, P(improvement), power line and verdict.")
    def compare(
        root: Path = typer.Argument(..., help="A sweep directory (or any folder of run directories), or a kept-data "
                                              "folder (`--export`)."),
        baseline: str = typer.Option("grpo", "--baseline", help="Label of the descriptive paired differences "
                                                                "(without a pre-registration)."),
        late_frac: float = typer.Option(0.25, "--late-frac", help="Fraction of the last steps that is 'late'."),
        csv: Optional[Path] = typer.Option(None, "--csv", help="Also write the per-run (per-seed) metrics to this "
                                                               "CSV file."),
        export: Optional[Path] = typer.Option(None, "--export", help="Also write the kept-data folder (runs.csv, "
                                              "scalars.csv.gz, metrics.csv, sweep/prereg/update-distance files) "
                                              "here: the few MB a report is regenerated from."),
    ) -> None:
        from dhpo_suite.science import compare as cmp
        from dhpo_suite.science import kept
        from dhpo_suite.science.analysis import analyse
        from dhpo_suite.science.tables import interval_table, runs_note

        if not root.is_dir():
            _fail(f"{root}: not a directory")
        if not 0 < late_frac <= 1:
            _fail(f"--late-frac: must lie in (0, 1], got {late_frac}")
        if export is not None and kept.is_kept(root):
            _fail(f"--export: {root} is already a kept-data folder (export from the sweep directory)")
        if csv is not None and (problem := file_problem(csv)):
            _fail(f"--csv: {problem}")  # before the sweep is read, not after (issue 29)
        if export is not None and (problem := dir_problem(export)):
            _fail(f"--export: {problem}")
        try:
            a = analyse(root, late_frac)
        except PreregError as e:
            _fail(str(e))
        console = Console()
        for p in a.problems:
            console.print(f"[yellow]skipped:[/] {p}", highlight=False)
        if a.metrics.empty:
            _fail(f"{root}: no run with committed steps" + (f" (skipped {a.problems[0]})" if a.problems else ""))
        console.print(runs_note(a.metrics), highlight=False)
        console.print(interval_table(cmp.summarize(a.metrics), "Per label: mean [95 % t-interval] across seeds "
                                                               "(no interval below 3 seeds)"))
        if a.prereg is None:
            _descriptive(console, a.metrics, baseline)
        else:
            _registered(console, a)
        if csv is not None:  # written whole or not at all (runs.safe_write); a full disk: one line, exit 2
            with atomic_file(csv, "w", encoding="utf-8", newline="") as f:
                a.metrics.to_csv(f, index=False)
            console.print(f"per-run metrics: {csv}")
        if export is not None:
            with staged_dir(export) as tmp:
                kept.export(root, tmp, late_frac)
            console.print(f"kept data: {export}")


def _descriptive(console, metrics, baseline: str) -> None:
    from dhpo_suite.science import compare as cmp
    from dhpo_suite.science.tables import interval_table

    console.print("no pre-registration (prereg.json, written by `dhpo-suite sweep --prereg` before the runs): "
                  "descriptive tables only, no verdicts", highlight=False)
    diffs = cmp.paired_differences(metrics, baseline)
    if diffs.empty:
        console.print(f"no paired differences: no runs labelled {baseline!r} (see --baseline)")
    else:
        console.print(interval_table(diffs, f"Paired difference vs {baseline} over shared seeds: mean [95 % "
                                            "t-interval], unadjusted for multiplicity"))


def _registered(console, a) -> None:
    from dhpo_suite.science.tables import CONTRAST_HEADER, contrast_rows, rich_table

    console.print(f"pre-registration: {a.source / 'prereg.json'} (sha256 {a.prereg.sha256[:12]}…, registered in "
                  f"sweep.json before the runs); primary metric {a.prereg.primary_metric}; family of "
                  f"{len(a.prereg.family)}, Holm at α {a.prereg.alpha:g}", highlight=False)
    done = int((a.metrics["status"] == "completed").sum())
    console.print(f"[bold]Manipulation checks[/] (before any verdict; checks and contrasts read the {done} completed "
                  "runs only)")
    for line in a.checks.lines:
        console.print(f"- {line}", highlight=False)
    console.print(rich_table("Pre-registered contrasts: paired over shared seeds",
                             "t p: two-sided paired t-test; Holm p: the p the verdict reads (t, or TOST for an "
                             "equality), adjusted over the family; sign-flip p: exact permutation; TOST p: equivalence "
                             "within the margin; P(impr.): P(arm beats baseline in the claimed direction) over all "
                             "pairs of runs", CONTRAST_HEADER, contrast_rows(a.contrasts)))
    for title, column in (("[bold]Power[/]", "power"), ("[bold]Verdicts[/] (from prereg.json only)", "verdict")):
        console.print(title)
        for r in a.contrasts.itertuples():
            console.print(f"- {r.name}: {getattr(r, column)}", highlight=False)


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


def _read_prereg(path: Path) -> bytes:
    """The bytes of the pre-registration file, checked (every field) before anything is written."""
    from dhpo_suite.science.compare import METRIC_DOCS

    from dhpo_suite.runs.format import RunFormatError
    from dhpo_suite.runs.json_text import check_depth

    try:
        data = path.read_bytes()
        check_depth(data.decode("utf-8", errors="replace"), path)  # the JSON decoder recursed once per bracket
        parse(data, str(path), tuple(METRIC_DOCS))
    except OSError as e:
        raise sw.SweepError(f"--prereg: {path}: {e.strerror}") from None
    except (PreregError, RunFormatError) as e:
        raise sw.SweepError(f"--prereg: {e}") from None
    return data


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
