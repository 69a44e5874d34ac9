"""`dhpo-suite` command line: a thin router. Each part registers its own commands.

Heavy imports (torch, vLLM, verl, Streamlit) happen inside the commands, so `--help` stays fast.
"""

from __future__ import annotations

import typer

from dhpo_suite.dashboard.cli import register as register_dashboard
from dhpo_suite.eval.cli import register as register_eval
from dhpo_suite.grading.cli import register as register_grading
from dhpo_suite.tracking.cli import register as register_tracking
from dhpo_suite.train.cli import register as register_train
from dhpo_suite.train.verl_backend.data_cli import register as register_data

app = typer.Typer(
    name="dhpo-suite",
    help="DHPO for RLVR: train (embedded CPU trainer or verl), eval (paper protocol), dashboard.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
register_train(app)
register_eval(app)
register_grading(app)
register_data(app)
register_dashboard(app)
register_tracking(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
