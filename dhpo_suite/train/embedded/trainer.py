"""What setup hands the loop (`Trainer`), how a step's phases are timed (`StepTimer`), what a run returns.

Its own module so that `run_setup` (which builds a Trainer) and `loop` (which runs steps on it) import it
rather than each other.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import torch

from dhpo_suite.train.embedded.config import TrainConfig
from dhpo_suite.train.embedded.device import Compute

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from dhpo_suite.grading import GraderPool
    from dhpo_suite.runs.manifest import Manifest
    from dhpo_suite.runs.telemetry_spec import TelemetrySpec
    from dhpo_suite.tasks import Task
    from dhpo_suite.train.objectives import Objective

__all__ = ["StepTimer", "TrainResult", "Trainer"]


@dataclass(frozen=True)
class TrainResult:
    """Where the run is and what it reached."""

    run_dir: Path
    last_step: int
    heldout_initial: float | None  # held-out reward before the first update (None when resumed past it)
    heldout_final: float  # held-out reward after the last update
    wall_s: float


@dataclass(frozen=True)
class Trainer:
    """Everything the steps of one run use, built once by `run_setup.build` (the optimizer, scheduler and
    generator are stateful objects; the fields themselves never change)."""

    cfg: TrainConfig  # the effective config (the stored one when resuming)
    task: Task
    model: PreTrainedModel  # the policy being trained; the rollout samples from it too
    tokenizer: PreTrainedTokenizerBase
    objective: Objective  # the library loss with its hyper-parameters bound
    optimizer: torch.optim.Optimizer  # AdamW
    scheduler: torch.optim.lr_scheduler.LRScheduler  # linear warm-up, then constant
    generator: torch.Generator  # the mini-batch shuffle (checkpointed with the optimizer)
    pool: GraderPool  # the shared grader: rewards and held-out evaluation
    problems: list[dict[str, Any]]  # the training pool the step prompts are drawn from
    heldout: list[dict[str, Any]]  # the held-out problems of eval/heldout_reward
    max_new_tokens: int  # response budget (the task's unless --max-new-tokens)
    start_step: int  # 1, or the step after the checkpoint being resumed
    manifest: Manifest  # what the run directory records about the run
    spec: TelemetrySpec  # how telemetry bins its histograms (response length)
    compute: Compute  # the device the model and every step tensor live on, and the forward passes' precision


class StepTimer:
    """Wall time per phase of the current step, in seconds (`s`).

    Phases nest: while an inner phase runs (telemetry fed from inside the update) the outer one is paused, so
    each second is charged to exactly one phase, the innermost.
    """

    def __init__(self) -> None:
        self.s: dict[str, float] = {}
        self._open: list[str] = []
        self._since = 0.0

    def reset(self) -> None:
        """Start a new step."""
        self.s.clear()

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._switch()
        self._open.append(name)
        try:
            yield
        finally:
            self._switch()
            self._open.pop()

    def _switch(self) -> None:
        """Charge the time since the last switch to the innermost open phase."""
        now = time.perf_counter()
        if self._open:
            name = self._open[-1]
            self.s[name] = self.s.get(name, 0.0) + now - self._since
        self._since = now
