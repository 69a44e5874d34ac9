"""`dhpo-suite dashboard` (filled in by the dashboard issue)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command(help="Open the Streamlit dashboard over a runs directory (not built yet).")
    def dashboard() -> None:
        typer.echo("dhpo-suite dashboard: not built yet.", err=True)
        raise typer.Exit(1)
