"""`dhpo-suite export RUN --to tensorboard|wandb`: mirror an existing run's history afterwards."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console
from rich.progress import Progress

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    @app.command(help="Mirror a run directory's step telemetry (scalars, histograms, sampled rollouts, manifest) "
                      "to TensorBoard or Weights & Biases. W&B runs offline without an API key "
                      "(upload later with `wandb sync`).")
    def export(
        run: Path = typer.Argument(..., help="Run directory (holds manifest.json)."),
        to: str = typer.Option(..., "--to", help="tensorboard or wandb."),
        out: Optional[Path] = typer.Option(
            None, "--out", help="TensorBoard: the log directory (default <runs root>/tensorboard/<run>); "
                                "W&B: the folder for wandb/ (default <runs root>)."),
        table_every: int = typer.Option(10, "--table-every", min=0,
                                        help="W&B: sampled rollouts as a table every N steps (0: none)."),
        project: str = typer.Option("dhpo-suite", "--project", help="W&B project."),
        no_progress: bool = typer.Option(False, "--no-progress", help="No progress bar."),
    ) -> None:
        from dhpo_suite.runs import RunFormatError
        from dhpo_suite.runs.out_paths import dir_problem
        from dhpo_suite.tracking.export import export_run
        from dhpo_suite.tracking.mirrors import LOGGERS, default_location

        if to not in LOGGERS:
            _fail(f"--to: {to!r} is not one of: {', '.join(LOGGERS)}")
        if out is not None and (problem := dir_problem(out)):
            _fail(f"--out: {problem}")
        console = Console(stderr=True)
        say = lambda text: console.print(text, markup=False, highlight=False, soft_wrap=True)  # noqa: E731
        try:
            with Progress(console=console, disable=no_progress, transient=True) as bar, _staged(run, to, out) as where:
                task = bar.add_task(f"export to {to}", total=None)
                result = export_run(run, to, where, table_every=table_every, project=project,
                                    progress=lambda done, total: bar.update(task, completed=done, total=total))
            if to == "tensorboard":
                result.location = out if out is not None else default_location(to, run)
        except RunFormatError as e:
            _fail(str(e))
        except ImportError as e:
            _fail(f"--to {to}: {e} (install it: pip install {to})")
        except OSError as e:  # the default location beside the run, or a disk that filled up
            _fail(f"--out: {e.filename or out}: cannot write there ({e.strerror or e})")
        for problem in result.problems:
            say(f"warning: skipped {problem}")
        say(f"{result.steps} steps -> {result.location}")
        if to == "tensorboard":
            say(f"view: tensorboard --logdir {result.location.parent}")
        elif "offline-run" in str(result.location):
            say(f"upload: wandb sync {result.location}")


@contextmanager
def _staged(run: Path, to: str, out: Path | None) -> Iterator[Path | None]:
    """TensorBoard: the event file is written in a temporary folder beside the log directory and renamed into it
    at the end (runs.safe_write), so a full disk leaves no 0-byte or partial file and is one line naming it; the
    event writer's thread, failing the same write, prints no stray "Exception in thread" (the main thread
    reports it). W&B keeps its own folder layout."""
    if to != "tensorboard":
        yield out
        return
    from dhpo_suite.runs import RunFormatError, read_manifest
    from dhpo_suite.runs.safe_write import staged_dir
    from dhpo_suite.tracking.mirrors import default_location

    try:
        read_manifest(run)  # a missing or damaged run is told as such, before any folder is made
    except RunFormatError:
        yield out
        return
    previous = threading.excepthook
    threading.excepthook = lambda a: None if isinstance(a.exc_value, OSError) else previous(a)
    try:
        with staged_dir(out if out is not None else default_location(to, run)) as tmp:
            yield tmp
    finally:
        threading.excepthook = previous


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)
