"""`dhpo-suite train` and `dhpo-suite data` (filled in by the trainer and verl-backend issues)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command(help="Train with DHPO or a baseline (not built yet).")
    def train() -> None:
        typer.echo("dhpo-suite train: not built yet.", err=True)
        raise typer.Exit(1)
