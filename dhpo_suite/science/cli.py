"""`dhpo-suite sweep` (a grid of training runs, dhpo_suite.train.sweep) and `dhpo-suite compare` (their
statistics across seeds, dhpo_suite.science.compare)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

import click
import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command(
        help="Run an algorithm x clip x seed grid of `dhpo-suite train` runs under OUT, in parallel, resumably "
             "(re-run the same command, or `dhpo-suite sweep OUT`, to continue). Any other option is passed to "
             "every `dhpo-suite train` run, e.g. --steps 40 --ppo-epochs 2 --mini-batches 4.",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )
    def sweep(
        ctx: typer.Context,
        out: Path = typer.Argument(..., help="Sweep directory (one run directory per cell, sweep.json, logs/)."),
        algos: Optional[str] = typer.Option(None, "--algos", help="Comma-separated objectives, e.g. "
                                            "grpo,gspo,gmpo,cispo,dhpo-a,dhpo-e. Omit to continue a stored sweep."),
        clip: Optional[str] = typer.Option(None, "--clip", help="DHPO clip modes to cross with DHPO objectives: "
                                           "branch, unified or branch,unified (default: the objective's, branch)."),
        seeds: Optional[str] = typer.Option(None, "--seeds", help="Number of seeds N (0..N-1) or a comma list."),
        workers: int = typer.Option(0, "--workers", help="Parallel runs (one torch thread each); 0: one per core."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar (one line per finished run)."),
        prereg: Optional[Path] = typer.Option(None, "--prereg", help="Pre-registration JSON (contrasts, family, "
                                              "margins, primary metric; docs/sweep.md): copied to OUT/prereg.json "
                                              "and its sha256 recorded before any run; compare's verdicts come "
                                              "only from it."),
    ) -> None:
        from dhpo_suite.train import sweep as sw

        try:
            requested, registration = None, None
            if algos is not None or seeds is not None or ctx.args or clip is not None or prereg is not None:
                requested = _requested(algos, clip, seeds, list(ctx.args))
                if prereg is not None:
                    registration = _read_prereg(prereg)
                    requested = dataclasses.replace(requested, prereg_sha256=_digest(registration))
            grid = sw.load_or_create(out, requested, registration)
        except sw.SweepError as e:
            _fail(str(e))
        n = workers or sw.default_workers()
        cells = grid.cells()
        typer.echo(f"sweep {out}: {len(cells)} runs ({', '.join(grid.algos)}; clip {','.join(grid.clips) or '-'}; "
                   f"seeds {','.join(map(str, grid.seeds))}; {grid.steps} steps each), {n} at a time", err=True)
        with _Bar(not no_progress) as bar:
            result = sw.run_sweep(out, grid, workers=n, on_update=bar.update)
        failed = {k: v for k, v in result.items() if v.startswith("failed")}
        skipped = sum(v == "skipped" for v in result.values())
        typer.echo(f"done: {len(result) - len(failed) - skipped} ran, {skipped} already complete, {len(failed)} "
                   f"failed. Compare them: dhpo-suite compare {out}", err=True)
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
        from dhpo_suite.runs.out_paths import dir_problem, file_problem
        from dhpo_suite.science import compare as cmp
        from dhpo_suite.science import kept
        from dhpo_suite.science.analysis import analyse
        from dhpo_suite.science.prereg import PreregError
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
        if csv is not None:
            a.metrics.to_csv(csv, index=False)
            console.print(f"per-run metrics: {csv}")
        if export is not None:
            kept.export(root, export, late_frac)
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
    from dhpo_suite.science.tables import CONTRAST_HEADER, contrast_rows

    console.print(f"pre-registration: {a.source / 'prereg.json'} (sha256 {a.prereg.sha256[:12]}…, registered in "
                  f"sweep.json before the runs); primary metric {a.prereg.primary_metric}; family of "
                  f"{len(a.prereg.family)}, Holm at α {a.prereg.alpha:g}", highlight=False)
    done = int((a.metrics["status"] == "completed").sum())
    console.print(f"[bold]Manipulation checks[/] (before any verdict; checks and contrasts read the {done} completed "
                  "runs only)")
    for line in a.checks.lines:
        console.print(f"- {line}", highlight=False)
    table = Table(title="Pre-registered contrasts: paired over shared seeds", caption_justify="left",
                  caption="t p: two-sided paired t-test; Holm p: the p the verdict reads (t, or TOST for an equality), "
                          "adjusted over the family; sign-flip p: exact "
                          "permutation; TOST p: equivalence within the margin; P(impr.): P(arm beats baseline "
                          "in the claimed direction) over all pairs of runs")
    for h in CONTRAST_HEADER:
        table.add_column(h, overflow="fold")
    for row in contrast_rows(a.contrasts):
        table.add_row(*row)
    console.print(table)
    console.print("[bold]Power[/]")
    for r in a.contrasts.itertuples():
        console.print(f"- {r.name}: {r.power}", highlight=False)
    console.print("[bold]Verdicts[/] (from prereg.json only)")
    for r in a.contrasts.itertuples():
        console.print(f"- {r.name}: {r.verdict}", highlight=False)


def _requested(algos, clip, seeds, train_args: list[str]):
    """The requested Sweep, with every option checked before any run starts."""
    from dhpo_suite.train import sweep as sw

    if algos is None or seeds is None:
        raise sw.SweepError("--algos and --seeds are both needed to start a sweep")
    names = tuple(a.strip() for a in algos.split(",") if a.strip())
    clips = tuple(c.strip() for c in clip.split(",") if c.strip()) if clip else ()
    try:
        seed_list = tuple(range(int(seeds))) if "," not in seeds else tuple(int(s) for s in seeds.split(","))
    except ValueError:
        raise sw.SweepError(f"--seeds: expected a count or a comma list of integers, got {seeds!r}") from None
    if not names or not seed_list or len(set(seed_list)) != len(seed_list) or min(seed_list) < 0:
        raise sw.SweepError(f"--algos/--seeds: need at least one objective and distinct seeds >= 0 "
                            f"(got {algos!r}, {seeds!r})")
    bad = [c for c in clips if c not in ("branch", "unified")]
    if bad:
        raise sw.SweepError(f"--clip: {bad[0]!r} is not one of: branch, unified")
    if clips and not any(a.startswith("dhpo") for a in names):
        raise sw.SweepError("--clip: only DHPO objectives have a clip mode; none is in --algos")
    for arg in train_args:
        if arg.split("=")[0] in sw.RESERVED:
            raise sw.SweepError(f"{arg.split('=')[0]}: set by the sweep for each run; not a pass-through option")
    steps = _check_train_args(names, clips, seed_list[0], train_args)
    return sw.Sweep(names, clips, seed_list, tuple(train_args), steps)


def _read_prereg(path: Path) -> bytes:
    """The bytes of the pre-registration file, checked (every field) before anything is written."""
    from dhpo_suite.science.compare import METRIC_DOCS
    from dhpo_suite.science.prereg import PreregError, parse
    from dhpo_suite.train import sweep as sw

    try:
        data = path.read_bytes()
        parse(data, str(path), tuple(METRIC_DOCS))
    except OSError as e:
        raise sw.SweepError(f"--prereg: {path}: {e.strerror}") from None
    except PreregError as e:
        raise sw.SweepError(f"--prereg: {e}") from None
    return data


def _digest(data: bytes) -> str:
    from dhpo_suite.science.prereg import digest

    return digest(data)


def _check_train_args(algos, clips, seed: int, train_args: list[str]) -> int:
    """Parse the pass-through options as `dhpo-suite train` would and validate one config per objective
    (errors name the option, as train's do). Returns the steps each run will take."""
    from dhpo_suite.train import sweep as sw
    from dhpo_suite.train.cli import register as register_train
    from dhpo_suite.train.embedded.config import ConfigError, TrainConfig
    from dhpo_suite.train.objectives.registry import parse_hparams

    probe = typer.Typer()
    register_train(probe)
    command = typer.main.get_command(probe)
    try:
        parsed = command.make_context("train", list(train_args), resilient_parsing=False)
    except click.ClickException as e:
        raise sw.SweepError(f"train option: {e.format_message()}") from None
    if parsed.args:
        raise sw.SweepError(f"unknown train option(s): {' '.join(parsed.args)} (see dhpo-suite train --help)")
    values = {k: v for k, v in parsed.params.items() if k in TrainConfig.field_docs()}
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
                raise sw.SweepError(f"--{e.field.replace('_', '-')}: {e.reason}") from None
    return int(values["steps"])


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


class _Bar:
    """A rich progress bar over the grid's steps, with runs finished / total and the runs in flight."""

    def __init__(self, enabled: bool) -> None:
        self.enabled, self._task, self._finished = enabled, None, 0

    def __enter__(self) -> "_Bar":
        if self.enabled:
            self._p = Progress(TextColumn("[bold]sweep[/] {task.fields[runs]}"), BarColumn(),
                               TextColumn("{task.completed}/{task.total} steps"), TimeElapsedColumn(),
                               TimeRemainingColumn(), TextColumn("{task.fields[info]}"))
            self._p.__enter__()
        return self

    def update(self, s: dict) -> None:
        runs = f"{s['finished']}/{s['cells']} runs"
        info = f"running: {', '.join(s['running'])}" + (f"  [red]{s['failed']} failed[/]" if s["failed"] else "")
        if not self.enabled:
            if s["finished"] != self._finished:
                typer.echo(f"sweep: {runs}, {s['steps']}/{s['total_steps']} steps; {info}", err=True)
                self._finished = s["finished"]
            return
        if self._task is None:
            self._task = self._p.add_task("sweep", total=s["total_steps"], runs=runs, info=info)
        self._p.update(self._task, completed=s["steps"], runs=runs, info=info)

    def __exit__(self, *exc) -> None:
        if self.enabled:
            self._p.__exit__(*exc)
