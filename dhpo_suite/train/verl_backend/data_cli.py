"""`dhpo-suite data prepare`: problems + answers -> verl's Parquet (see data.py for the format)."""

from __future__ import annotations

from pathlib import Path

import typer

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    data = typer.Typer(help="Prepare training data for the verl backend.", no_args_is_help=True)

    @data.command(help="Convert problems+answers to verl's RL Parquet (train.parquet, val.parquet).")
    def prepare(
        source: str = typer.Argument(
            "simplerl-zoo",
            help="'simplerl-zoo' (the paper's level 3-5 set from the hub) or a local .jsonl/.json/.parquet file.",
        ),
        out: Path = typer.Option(Path("data/verl"), "--out", "-o", help="Output directory."),
        limit: int = typer.Option(None, min=1, help="Keep only the first N problems (per split)."),
        val_size: int = typer.Option(64, min=0, help="Local files: problems held out for val.parquet."),
        seed: int = typer.Option(0, help="Seed of the held-out draw."),
    ) -> None:
        from dhpo_suite.train.verl_backend.data import DataError
        from dhpo_suite.train.verl_backend.data import prepare as run

        try:
            result = run(source, out, limit=limit, val_size=val_size, seed=seed)
        except DataError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(2) from None
        for note in result.notes:
            typer.echo(f"note: {note}", err=True)
        typer.echo(f"wrote {result.train} ({result.n_train} problems) and {result.val} ({result.n_val} problems)")

    app.add_typer(data, name="data")
