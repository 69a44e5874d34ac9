"""`dhpo-suite` command line: a thin router. Each part registers its own commands.

Heavy imports (torch, vLLM, verl, Streamlit) happen inside the commands, so `--help` stays fast.

Errors reach the user as one line on stderr: a bad option or value exits 2 (`error: ... (see dhpo-suite CMD
--help)`), an unexpected failure exits 1 with the exception's first line. `--debug` (or DHPO_DEBUG=1) lets the
Python traceback through instead.
"""

from __future__ import annotations

import os

import typer
from typer.core import TyperGroup

from dhpo_suite.dashboard.cli import register as register_dashboard
from dhpo_suite.eval.cli import register as register_eval
from dhpo_suite.grading.cli import register as register_grading
from dhpo_suite.runs.safe_write import WriteError
from dhpo_suite.science.cli import register as register_compare
from dhpo_suite.tracking.cli import register as register_tracking
from dhpo_suite.train.cli import register as register_train
from dhpo_suite.train.sweep_cli import register as register_sweep
from dhpo_suite.train.verl_backend.data_cli import register as register_data

__all__ = ["app", "debug_enabled", "main", "one_line"]

DEBUG_ENV = "DHPO_DEBUG"


def debug_enabled() -> bool:
    """True with --debug or DHPO_DEBUG set to anything but '', '0', 'false', 'no'."""
    return os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def one_line(text: str) -> str:
    """The first non-empty line of `text` (an exception message may carry a whole log)."""
    return next((line.strip() for line in str(text).splitlines() if line.strip()), "")


class _OneLineErrors(TyperGroup):
    """Click's usage errors and any uncaught exception become one line (exit 2 and 1); --debug shows tracebacks."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except typer.TyperException as e:  # click's UsageError and friends (typer vendors click)
            _usage_error(e)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (typer.Exit, typer.Abort):
            raise
        except typer.TyperException as e:
            _usage_error(e)
        except WriteError as e:  # any command's output (runs/safe_write.py): the file, the cause, nothing half-written
            typer.echo(f"error: {one_line(str(e))}", err=True)
            raise typer.Exit(2) from None
        except Exception as e:  # noqa: BLE001 - the last line of defence: no traceback unless asked for
            if debug_enabled():
                raise
            hint = f" (run with --debug or {DEBUG_ENV}=1 for the traceback)"
            typer.echo(f"error: {type(e).__name__}: {one_line(e) or 'no message'}{hint}", err=True)
            raise typer.Exit(1) from None


def _usage_error(e: typer.TyperException):
    if type(e).__name__ == "NoArgsIsHelpError":
        raise e  # `dhpo-suite` alone prints the help
    where = f" (see {e.ctx.command_path} --help)" if getattr(e, "ctx", None) is not None else ""
    typer.echo(f"error: {one_line(e.format_message())}{where}", err=True)
    raise typer.Exit(getattr(e, "exit_code", 2)) from None


app = typer.Typer(
    name="dhpo-suite",
    cls=_OneLineErrors,
    help="DHPO for RLVR: train (embedded CPU trainer or verl), eval (paper protocol), dashboard.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root(debug: bool = typer.Option(False, "--debug", envvar=DEBUG_ENV, show_envvar=True,
                                     help="Show Python tracebacks instead of one-line errors.")) -> None:
    if debug:
        os.environ[DEBUG_ENV] = "1"  # commands (and their worker processes) see it too


register_train(app)
register_sweep(app)
register_eval(app)
register_grading(app)
register_data(app)
register_dashboard(app)
register_tracking(app)
register_compare(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
