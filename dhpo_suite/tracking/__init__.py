"""Mirrors of the step telemetry in TensorBoard and Weights & Biases (docs/tracking.md).

The run directory stays the source of truth: mirrors read `StepRecord`s / run directories through
`dhpo_suite.runs` and write TensorBoard event files or W&B runs beside it, never inside it. No torch here.
Names resolve lazily so that `dhpo-suite --help` (which imports `tracking.cli`) loads no pandas.
"""

from importlib import import_module

_HOMES = {"ExportResult": "export", "export_run": "export", "LiveMirrors": "live", "open_live": "live",
          "LOGGERS": "mirrors", "parse_loggers": "mirrors"}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
