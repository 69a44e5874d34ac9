"""`dhpo-suite data prepare` (filled in by the verl-backend issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    data = typer.Typer(help="Prepare training data (not built yet).", no_args_is_help=True)

    @data.command(help="Convert problems+answers to verl's Parquet format (not built yet).")
    def prepare() -> None:
        typer.echo("dhpo-suite data prepare: not built yet.", err=True)
        raise typer.Exit(1)

    app.add_typer(data, name="data")
