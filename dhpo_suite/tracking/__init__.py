"""Mirrors of the step telemetry in TensorBoard and Weights & Biases (docs/tracking.md).

The run directory stays the source of truth: mirrors read `StepRecord`s / run directories through
`dhpo_suite.runs` and write TensorBoard event files or W&B runs beside it, never inside it. No torch here.
"""

from .export import ExportResult, export_run
from .live import LiveMirrors, open_live
from .mirrors import LOGGERS, parse_loggers

__all__ = ["LOGGERS", "ExportResult", "LiveMirrors", "export_run", "open_live", "parse_loggers"]
