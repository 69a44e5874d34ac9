"""Checkpoints: `checkpoints/step-{step:06d}/` = an HF model dir (safetensors) + `trainer_state.pt` (optimizer,
scheduler, RNG), marked COMPLETE through the run writer. `--resume` restarts from the newest complete one that
loads, falling back to older ones with a one-line warning.

A checkpoint holds data only: weights are read from safetensors alone (a `*.bin` pickle is never opened), and the
trainer state with `torch.load(weights_only=True)`, which accepts tensors, numbers, strings and containers and
refuses any other object, so a crafted pickle in a copied run directory cannot run code on `--resume`.

Writes go to a temporary folder beside the checkpoint, renamed into place, and the COMPLETE marker is written last
(atomically, by the runs module), so a SIGKILL mid-save leaves an unmarked directory that resume, the evaluator
and the dashboard ignore, and a full disk leaves no partial one.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from dhpo_suite.runs import RunReader
from dhpo_suite.runs.format import checkpoint_path
from dhpo_suite.runs.safe_write import staged_dir
from dhpo_suite.train.embedded.state_check import CheckpointError, check_against_model, check_state, python_rng

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from dhpo_suite.runs.writer import RunWriter

    ModelLoader = Callable[[Path], tuple[PreTrainedModel, PreTrainedTokenizerBase]]

__all__ = ["TRAINER_STATE", "CheckpointError", "Restored", "load_trainer_state", "read_trainer_state",
           "restore_latest", "save_checkpoint"]

TRAINER_STATE = "trainer_state.pt"
_STATE_KEYS = ("step", "optimizer", "scheduler", "generator", "torch_rng", "python_rng")


def save_checkpoint(writer: RunWriter, step: int, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                    optimizer: torch.optim.Optimizer, scheduler: torch.optim.lr_scheduler.LRScheduler,
                    generator: torch.Generator) -> Path:
    """Save the model (safetensors), tokenizer and trainer state for `step`; mark it complete last.

    The files are written into a temporary folder beside the checkpoint and renamed into it (runs.safe_write): a
    full disk is one WriteError naming the file, with no partial checkpoint left and the earlier ones as they were.
    """
    from safetensors import SafetensorError

    path = checkpoint_path(writer.run_dir, step)
    state = {"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "generator": generator.get_state(), "torch_rng": torch.get_rng_state(),
             "python_rng": random.getstate()}
    # safetensors and torch.save report a full disk as their own errors, not as OSError
    with staged_dir(path, errors=(SafetensorError, RuntimeError)) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        torch.save(state, tmp / TRAINER_STATE)
    writer.checkpoint_complete(step)
    return path


def read_trainer_state(path: Path) -> dict[str, Any]:
    """The trainer state of a checkpoint dir, read as data only (weights_only=True); CheckpointError if unusable."""
    file = Path(path) / TRAINER_STATE
    try:
        state = torch.load(file, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise CheckpointError(f"{file}: missing") from None
    except Exception as e:  # noqa: BLE001 - unpickling refusals and corrupt files come as many types
        reason = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if "weights_only" in str(e) or "Unsupported global" in str(e):
            reason = "holds objects other than tensors and plain data (refused: loading it could run code)"
        raise CheckpointError(f"{file}: cannot be read: {reason}") from None
    if not isinstance(state, dict) or any(k not in state for k in _STATE_KEYS):
        raise CheckpointError(f"{file}: not a trainer state (expected the keys {', '.join(_STATE_KEYS)})")
    check_state(state, file)  # sizes, groups, finite values: a wrong state falls back like an unreadable one
    return state


def load_trainer_state(state: dict[str, Any], optimizer: torch.optim.Optimizer,
                       scheduler: torch.optim.lr_scheduler.LRScheduler, generator: torch.Generator) -> int:
    """Restore optimizer, scheduler and RNG state from `read_trainer_state`'s dict; returns its step."""
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    generator.set_state(state["generator"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(python_rng(state["python_rng"]))
    return int(state["step"])


class Restored:
    """The checkpoint a resume starts from: its step, directory, model, tokenizer and trainer state."""

    def __init__(self, step: int, path: Path, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase,
                 state: dict[str, Any]) -> None:
        self.step, self.path, self.model, self.tokenizer, self.state = step, path, model, tokenizer, state


def restore_latest(run_dir: Path, load_model: ModelLoader, warn: Callable[[str], None],
                   checkpoints: dict[int, Path] | None = None) -> Restored | None:
    """The newest complete checkpoint whose trainer state and model both load and agree (state_check: shapes,
    parameter groups, RNG sizes, finite values); older ones on failure.

    Each skipped checkpoint gets one warning line. None when the run has no complete checkpoint; CheckpointError
    when it has some and none loads (starting over would overwrite the recorded steps). `checkpoints`: the run's
    complete checkpoints {step: path} when the caller has read them already (start.open_run).
    """
    found = sorted((RunReader(run_dir).checkpoints() if checkpoints is None else checkpoints).items(), reverse=True)
    reasons = []
    for step, path in found:
        try:
            state = read_trainer_state(path)
            if int(state["step"]) != step:
                raise CheckpointError(f"{path / TRAINER_STATE}: holds step {state['step']}, not {step}")
            model, tokenizer = load_model(path)
            check_against_model(state, model, path / TRAINER_STATE)
        except (CheckpointError, ValueError, OSError) as e:
            reasons.append((step, " ".join(str(e).split())))
            continue
        for bad, why in reasons:  # only once one loads: when none does, the error alone says it all
            warn(f"warning: checkpoint step {bad} unusable ({why}); falling back to step {step}")
        return Restored(step, path, model, tokenizer, state)
    if found:
        raise CheckpointError(f"{run_dir}: none of its {len(found)} complete checkpoint(s) loads (newest: "
                              f"{reasons[0][1]}); nothing was resumed or changed")
    return None
