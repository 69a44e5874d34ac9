"""The run directory: writer, reader, step records and the format spec (docs/run-format.md). No torch here."""

from .bins import TelemetrySpec
from .format import (
    FORMAT_VERSION,
    Problem,
    RunFormatError,
    checkpoint_path,
    is_checkpoint_complete,
)
from .manifest import Manifest, read_manifest
from .metrics import METRICS, describe
from .reader import RunReader, RunSummary, list_runs
from .records import Histogram, StepRecord
from .state import TelemetryState
from .writer import RunWriter, mark_checkpoint_complete

__all__ = [
    "FORMAT_VERSION",
    "Histogram",
    "METRICS",
    "Manifest",
    "Problem",
    "RunFormatError",
    "RunReader",
    "RunSummary",
    "RunWriter",
    "StepRecord",
    "TelemetrySpec",
    "TelemetryState",
    "checkpoint_path",
    "describe",
    "is_checkpoint_complete",
    "list_runs",
    "mark_checkpoint_complete",
    "read_manifest",
]
