"""`dhpo-suite sweep` (a grid of training runs, dhpo_suite.train.sweep) and `dhpo-suite compare` (their
statistics across seeds, dhpo_suite.science.compare)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

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
    ) -> None:
        from dhpo_suite.train import sweep as sw

        try:
            requested = None
            if algos is not None or seeds is not None or ctx.args or clip is not None:
                requested = _requested(algos, clip, seeds, list(ctx.args))
            grid = sw.load_or_create(out, requested)
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

    @app.command(help="Per algorithm: mean and 95 % bootstrap interval across seeds of final held-out reward, "
                      "reward AUC, late entropy and length, collapse step, oscillation; paired differences "
                      "against a baseline over shared seeds.")
    def compare(
        root: Path = typer.Argument(..., help="A sweep directory (or any folder of run directories)."),
        baseline: str = typer.Option("grpo", "--baseline", help="Label the paired differences are taken against."),
        late_frac: float = typer.Option(0.25, "--late-frac", help="Fraction of the last steps that is 'late'."),
        csv: Optional[Path] = typer.Option(None, "--csv", help="Also write the per-run metrics to this CSV file."),
    ) -> None:
        from rich.console import Console

        from dhpo_suite.runs.out_paths import file_problem
        from dhpo_suite.science import compare as cmp
        from dhpo_suite.science.tables import interval_table, runs_note

        if not root.is_dir():
            _fail(f"{root}: not a directory")
        if not 0 < late_frac <= 1:
            _fail(f"--late-frac: must lie in (0, 1], got {late_frac}")
        if csv is not None and (problem := file_problem(csv)):
            _fail(f"--csv: {problem}")  # before the sweep is read, not after
        metrics, _, problems = cmp.load_sweep(root, late_frac)
        console = Console()
        for p in problems:
            console.print(f"[yellow]skipped:[/] {p}", highlight=False)
        if metrics.empty:
            _fail(f"{root}: no run with committed steps" + (f" (skipped {problems[0]})" if problems else ""))
        console.print(runs_note(metrics), highlight=False)
        console.print(interval_table(cmp.summarize(metrics), "Per algorithm: mean [95 % bootstrap CI] across seeds"))
        diffs = cmp.paired_differences(metrics, baseline)
        if diffs.empty:
            console.print(f"no paired differences: no runs labelled {baseline!r} (see --baseline)")
        else:
            console.print(interval_table(diffs, f"Paired difference vs {baseline} over shared seeds: mean [95 % CI]"))
        if csv is not None:
            metrics.to_csv(csv, index=False)
            console.print(f"per-run metrics: {csv}")


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


def _check_train_args(algos, clips, seed: int, train_args: list[str]) -> int:
    """Parse the pass-through options as `dhpo-suite train` would and validate one config per objective
    (errors name the option, as train's do). Returns the steps each run will take."""
    import click

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
            from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

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
