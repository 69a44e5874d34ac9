"""The TensorBoard mirror: one event per step with every scalar and 1-D histogram, built with TensorBoard's own
protos and event-file writer (no torch: `dhpo-suite export` stays light).

Scalars are `simple_value`s (float32, TensorBoard's scalar type); histograms are `HistogramProto`s with the
run directory's own bins (`bucket_limit` = right edges, `min` = left edge of the first non-empty bin, sums
from bin midpoints); the manifest is a text summary (`manifest`, a JSON block) at step 0.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from dhpo_suite.runs import StepRecord

from . import content

__all__ = ["TensorBoardMirror", "preload", "step_summary", "text_summary"]


class TensorBoardMirror:
    """Writes steps into a TensorBoard log directory, or into an open writer (verl's SummaryWriter)."""

    name = "tensorboard"

    def __init__(self, logdir: Path | str | None = None, *, file_writer: Any = None, text_tag: str = "manifest"):
        """`logdir`: a directory of our own (an event file is created there); `file_writer`: anything with
        `add_event(event)` and `flush()` (torch's FileWriter, TensorBoard's EventFileWriter) to share."""
        self._owned = file_writer is None
        if file_writer is None:
            from tensorboard.summary.writer.event_file_writer import EventFileWriter

            Path(logdir).mkdir(parents=True, exist_ok=True)
            file_writer = EventFileWriter(str(logdir))
        self.writer = file_writer
        self.location = Path(logdir) if logdir is not None else Path(file_writer.get_logdir())
        self.text_tag = text_tag

    def start(self, manifest: Any) -> None:
        """The manifest as the run's config: a text summary at step 0."""
        config = json.dumps(content.manifest_config(manifest), indent=1, default=str)
        self._add(text_summary(self.text_tag, f"```json\n{config}\n```"), 0)

    def log_step(self, record: StepRecord, *, samples: bool = False) -> None:
        """Scalars and histograms of one step (sampled rollouts go to W&B only)."""
        self._add(step_summary(record), record.step)

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        if self._owned:
            self.writer.close()
        else:
            self.writer.flush()

    def _add(self, summary, step: int) -> None:
        from tensorboard.compat.proto.event_pb2 import Event

        self.writer.add_event(Event(wall_time=time.time(), step=int(step), summary=summary))


def preload() -> None:
    """Import what the mirror uses (TensorBoard's protos, writer and text-plugin metadata)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2  # noqa: F401
    from tensorboard.plugins.text import metadata  # noqa: F401
    from tensorboard.summary.writer import event_file_writer  # noqa: F401


def step_summary(record: StepRecord):
    """One Summary proto holding every scalar and every 1-D histogram of the step."""
    from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary

    values = [Summary.Value(tag=k, simple_value=v) for k, v in content.scalars(record).items()]
    for name, b in content.histograms(record).items():
        mid = 0.5 * (b.edges[:-1] + b.edges[1:])  # Σx, Σx² with every value at its bin's midpoint
        histo = HistogramProto(min=float(b.edges[0]), max=float(b.edges[-1]), num=float(b.counts.sum()),
                               sum=float(np.dot(b.counts, mid)), sum_squares=float(np.dot(b.counts, mid * mid)),
                               bucket_limit=b.edges[1:].tolist(), bucket=b.counts.astype(float).tolist())
        values.append(Summary.Value(tag=name, histo=histo))
    return Summary(value=values)


def text_summary(tag: str, text: str):
    """A text-plugin summary (markdown), as TensorBoard's text plugin reads it."""
    from tensorboard.compat.proto.summary_pb2 import Summary
    from tensorboard.compat.proto.tensor_pb2 import TensorProto
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.plugins.text import metadata

    tensor = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf-8")],
                         tensor_shape=TensorShapeProto(dim=[]))
    return Summary(value=[Summary.Value(tag=tag, metadata=metadata.create_summary_metadata("", ""), tensor=tensor)])
