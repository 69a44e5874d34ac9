"""Telemetry: an objective's per-token output -> one step record that merges exactly across micro-batches and ranks.

Every writer-side reduction lives here; `dhpo_suite.runs` only stores and reads the result (docs/run-format.md).

    accumulate.py  TelemetryAccumulator: device-side counts, float64 sums, histograms (the training loop calls it)
    flags.py       clip_flags: outside / binding flags of one objective branch (the one place they are derived)
    metrics.py     the step-metric registries: a new metric is one function there (+ its definition in runs.metrics)
    select.py      outlier tokens and sample responses, picked exactly under merging
    state.py       TelemetryState: the numpy partial of a step; merges, serialises, builds the StepRecord
    record.py      merged state -> StepRecord parts (scalars, distributions, outlier and sample rows)
    bins.py        fixed histogram edges and histogram percentiles
The numpy oracle the tests check all of this against is tests/telemetry/oracle.py.
"""

from dhpo_suite.train.telemetry.accumulate import TelemetryAccumulator, reduce_across_ranks, token_decoder
from dhpo_suite.train.telemetry.flags import ClipFlags, clip_flags
from dhpo_suite.train.telemetry.metrics import response_metric, token_metric
from dhpo_suite.train.telemetry.state import Decode, TelemetryState

__all__ = ["ClipFlags", "Decode", "TelemetryAccumulator", "TelemetryState", "clip_flags", "reduce_across_ranks",
           "response_metric", "token_decoder", "token_metric"]
