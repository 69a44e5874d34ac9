"""`dhpo-suite eval` and `dhpo-suite grade` (filled in by the evaluator issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command(help="Evaluate a model on the paper's benchmarks (not built yet).")
    def eval() -> None:  # noqa: A001 - the command's name
        typer.echo("dhpo-suite eval: not built yet.", err=True)
        raise typer.Exit(1)
