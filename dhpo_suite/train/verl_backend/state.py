"""The verl backend's one piece of mutable state per process: `STATE` (a leaf: standard library only).

verl calls into the plugin from its own code (a wrapped `ppo_loss`, a wrapped `TrainingWorker` method, the
policy-loss function), so what those calls share cannot be passed as arguments; it lives here, in one object
whose fields say who writes and who reads them, instead of in module globals scattered over the backend.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

__all__ = ["ProcessState", "STATE", "StepObserver"]


class StepObserver(Protocol):
    """The telemetry step running in this process (rank_telemetry.StepTelemetry)."""

    def observe(self, out: Any, micro_batch: Any) -> None:
        """Add one loss call's ObjectiveOutput, computed on `micro_batch` (seam.MicroBatch)."""


@dataclass
class ProcessState:
    """Everything the plugin remembers between verl's calls in one process."""

    micro_batch: contextvars.ContextVar = field(
        default_factory=lambda: contextvars.ContextVar("dhpo_suite_micro_batch", default=None))
    """The micro-batch (seam.MicroBatch) whose `ppo_loss` call is running: set by seam's wrapper, read by the
    loss (entropy, telemetry). A context variable: concurrent calls each see their own."""
    step: StepObserver | None = None
    """The telemetry step of the running actor update (rank_telemetry.run_step), None outside one."""
    steps_done: dict[str, int] = field(default_factory=dict)
    """run directory -> last telemetry step written by this process."""
    resumed_at: int = 0
    """verl's global step of the checkpoint this process resumed from (the next step is one more)."""
    writers: dict[str, Any] = field(default_factory=dict)
    """run directory -> RunWriter (the writing rank only)."""
    decode: Callable | None = None
    """token id -> text, built once from the actor's tokenizer."""
    pending_imports: dict[str, list[Callable[[Any], object]]] = field(default_factory=dict)
    """verl module name -> patches waiting for verl to import it (seam.after_import)."""


STATE = ProcessState()
