"""`dhpo-suite grade FILE.jsonl` (filled in by the evaluator issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command(help="Grade a JSONL file of responses (not built yet).")
    def grade() -> None:
        typer.echo("dhpo-suite grade: not built yet.", err=True)
        raise typer.Exit(1)
