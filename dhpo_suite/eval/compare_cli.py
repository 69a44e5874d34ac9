"""`dhpo-suite eval-compare A B` (two results directories) and `eval-compare --run R` (a run's checkpoints)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

__all__ = ["register"]


def _pct(x) -> str:
    """Percentage points with one decimal; "-" for none (a first checkpoint, a single problem)."""
    return "-" if x is None or x != x else f"{100 * x:.1f}"


def _p(x) -> str:
    return "-" if x is None or x != x else f"{x:.4f}"


def register(app: typer.Typer) -> None:
    @app.command("eval-compare", help="Compare two evaluations problem by problem: each benchmark's difference in "
                                      "avg@k (B - A) with its paired 95 % interval and p (exact McNemar for one "
                                      "sample a problem). --run R: a CSV across the run's evaluated checkpoints.")
    def eval_compare(
        a: Path = typer.Argument(None, help="Results directory A (the baseline)."),
        b: Path = typer.Argument(None, help="Results directory B."),
        run: Path = typer.Option(None, "--run", help="Training run: every evaluated checkpoint (evals/step-*/)."),
        csv_out: Path = typer.Option(None, "--csv", help="Write the rows as CSV here (--run: default "
                                                         "RUN/evals/accuracy.csv)."),
    ) -> None:
        from dhpo_suite.eval.compare import as_rows, compare_dirs, run_table, write_csv
        from dhpo_suite.runs import eval_results as er

        try:
            if run is not None:
                if a is not None:
                    raise ValueError("give A B, or --run RUN, not both")
                rows = run_table(run)
                if not rows:
                    raise ValueError(f"--run: {run}: no evaluated checkpoints (evals/step-*/summary.json)")
                path = csv_out or Path(run) / "evals" / "accuracy.csv"
                write_csv(rows, path)
                for r in rows:
                    typer.echo(f"step {r['step']:>6} {r['bench']:<14} {r['metric']} {_pct(r['value'])} "
                               f"± {_pct(r['se'])} (se)  vs first: {_pct(r['diff_vs_first'])} "
                               f"[{_pct(r['low'])}, {_pct(r['high'])}] p={_p(r['p'])}")
                typer.echo(f"csv: {path}")
                return
            if a is None or b is None:
                raise ValueError("give two results directories A B, or --run RUN")
            for d in (a, b):
                if not (Path(d) / er.CONFIG).is_file():
                    raise ValueError(f"{d}: not a results directory (no {er.CONFIG})")
            pairs = compare_dirs(a, b)
        except (ValueError, OSError) as e:
            typer.echo(f"error: {' '.join(str(e).split())}", err=True)
            raise typer.Exit(2)
        if not pairs:
            typer.echo("error: the two evaluations share no benchmark with common problems", err=True)
            raise typer.Exit(2)
        typer.echo(f"{'bench':<14} {'problems':>8} {'A %':>6} {'B %':>6} {'B-A':>6}  {'95% interval':<16} "
                   f"{'p':>7}  test", file=sys.stdout)
        for p in pairs:
            typer.echo(f"{p.bench:<14} {p.problems:>8} {_pct(p.avg_a):>6} {_pct(p.avg_b):>6} {_pct(p.diff):>6}  "
                       f"[{_pct(p.low)}, {_pct(p.high)}]".ljust(60) + f" {_p(p.p):>7}  {p.test}")
        if csv_out is not None:
            write_csv(as_rows(pairs), csv_out)
