"""The run directory: writer, reader, manifest, step records and the format spec (docs/run-format.md). No torch here.

Only the format lives here; the reductions that build a StepRecord live in `dhpo_suite.train.telemetry`.

Names resolve lazily (PEP 562): importing one submodule (say `runs.eval_results` from the evaluator's CLI)
must not pull the reader's pandas into `dhpo-suite --help`.
"""

from importlib import import_module

_HOMES = {
    "TelemetrySpec": "telemetry_spec",
    "FORMAT_VERSION": "format", "Problem": "format", "RunFormatError": "format", "checkpoint_path": "format",
    "is_checkpoint_complete": "format",
    "Manifest": "manifest", "read_manifest": "manifest", "SHARED_HPARAMS": "manifest", "run_hparams": "manifest",
    "METRICS": "metrics",
    "RunReader": "reader", "RunSummary": "reader", "list_runs": "reader",
    "Histogram": "records", "StepRecord": "records",
    "RunWriter": "writer", "mark_checkpoint_complete": "writer",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
