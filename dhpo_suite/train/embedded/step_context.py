"""What one embedded run carries from setup into its steps, and what it returns.

Its own module so that `run_setup` (which builds a StepContext) and `loop` (which runs steps on it) import it
rather than each other.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch

from dhpo_suite.train.embedded.config import TrainConfig

__all__ = ["StepContext", "StepTimer", "TrainResult"]


@dataclass(frozen=True)
class TrainResult:
    """Where the run is and what it reached."""

    run_dir: Path
    last_step: int
    heldout_initial: float | None  # held-out reward before the first update (None when resumed past it)
    heldout_final: float  # held-out reward after the last update
    wall_s: float


@dataclass
class StepContext:
    """Everything a step needs (built once by `train`)."""

    cfg: TrainConfig
    task: object
    model: object
    tokenizer: object
    objective: object
    optimizer: torch.optim.Optimizer
    scheduler: object
    generator: torch.Generator
    pool: object
    problems: list[dict]
    max_new_tokens: int
    timer: "StepTimer"


class StepTimer:
    """Wall time per phase of the current step (telemetry's share is reported as time/telemetry_s)."""

    def __init__(self) -> None:
        self.s: dict[str, float] = {}

    def add(self, name: str, t0: float) -> None:
        self.s[name] = self.s.get(name, 0.0) + time.perf_counter() - t0
