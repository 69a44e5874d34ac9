"""`dhpo-suite compare`: the statistics across seeds of a sweep (or any folder of runs), printed from
`dhpo_suite.science.analyse`. Its options are `CompareArgs`' fields (dhpo_suite.config_cli), as `train`'s are
`TrainConfig`'s."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import typer
from rich.console import Console

from dhpo_suite.config_cli import Spell, Values, config_command
from dhpo_suite.runs.out_paths import dir_problem, file_problem
from dhpo_suite.runs.safe_write import atomic_file, staged_dir

__all__ = ["CompareArgs", "register"]


@dataclass(frozen=True)
class CompareArgs:
    """`dhpo-suite compare`'s options."""

    root: Path
    """A sweep directory (or any folder of run directories), or a kept-data folder (`--export`)."""
    baseline: str = "grpo"
    """Label of the descriptive paired differences (without a pre-registration)."""
    late_frac: float = 0.25
    """Fraction of the last steps that is 'late'."""
    csv: Path | None = None
    """Also write the per-run (per-seed) metrics to this CSV file."""
    export: Path | None = None
    """Also write the kept-data folder (runs.csv, scalars.csv.gz, metrics.csv, sweep/prereg/update-distance
    files) here: the few MB a report is regenerated from."""


SPELL = {"root": Spell(argument=True)}


def register(app: typer.Typer) -> None:
    @app.command(help="Per label: mean and 95 % t-interval across seeds of final held-out reward, reward AUC, "
                      "late entropy and length, collapse step, residual sd. With a pre-registration (prereg.json, "
                      "`sweep --prereg`): manipulation checks, then each contrast's paired t-interval, t-test and "
                      "Holm-adjusted p, exact sign-flip p, TOST, P(improvement), power line and verdict.")
    @config_command(CompareArgs, spell=SPELL)
    def compare(ctx: typer.Context, v: Values) -> None:
        _compare(CompareArgs(**v.of(CompareArgs)))


def _compare(a: CompareArgs) -> None:
    from dhpo_suite import science
    from dhpo_suite.science import kept
    from dhpo_suite.science.prereg import PreregError
    from dhpo_suite.science.tables import interval_table, runs_note

    _check(a)
    try:
        analysis = science.analyse(a.root, a.late_frac)
    except PreregError as e:
        _fail(str(e))
    console = Console()
    for p in analysis.problems:
        console.print(f"[yellow]skipped:[/] {p}", highlight=False)
    if analysis.metrics.empty:
        _fail(f"{a.root}: no run with committed steps" + (f" (skipped {analysis.problems[0]})"
                                                          if analysis.problems else ""))
    console.print(runs_note(analysis.metrics), highlight=False)
    console.print(interval_table(science.summarize(analysis.metrics), "Per label: mean [95 % t-interval] across "
                                                                      "seeds (no interval below 3 seeds)"))
    if analysis.prereg is None:
        _descriptive(console, analysis.metrics, a.baseline)
    else:
        _registered(console, analysis)
    if a.csv is not None:  # written whole or not at all (runs.safe_write); a full disk: one line, exit 2
        with atomic_file(a.csv, "w", encoding="utf-8", newline="") as f:
            analysis.metrics.to_csv(f, index=False)
        console.print(f"per-run metrics: {a.csv}")
    if a.export is not None:
        with staged_dir(a.export) as tmp:
            kept.export(a.root, tmp, a.late_frac)
        console.print(f"kept data: {a.export}")


def _check(a: CompareArgs) -> None:
    """Every option, before the sweep is read (a bad --csv is found before, not after: issue 29)."""
    from dhpo_suite.science import kept

    if not a.root.is_dir():
        _fail(f"{a.root}: not a directory")
    if not 0 < a.late_frac <= 1:
        _fail(f"--late-frac: must lie in (0, 1], got {a.late_frac}")
    if a.export is not None and kept.is_kept(a.root):
        _fail(f"--export: {a.root} is already a kept-data folder (export from the sweep directory)")
    if a.csv is not None and (problem := file_problem(a.csv)):
        _fail(f"--csv: {problem}")
    if a.export is not None and (problem := dir_problem(a.export)):
        _fail(f"--export: {problem}")


def _descriptive(console, metrics, baseline: str) -> None:
    from dhpo_suite import science
    from dhpo_suite.science.tables import interval_table

    console.print("no pre-registration (prereg.json, written by `dhpo-suite sweep --prereg` before the runs): "
                  "descriptive tables only, no verdicts", highlight=False)
    diffs = science.paired_differences(metrics, baseline)
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


def _fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
