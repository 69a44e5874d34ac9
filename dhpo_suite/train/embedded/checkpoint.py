"""Checkpoints: `checkpoints/step-{step:06d}/` = an HF model dir + `trainer_state.pt` (optimizer, scheduler,
RNG), marked COMPLETE through the run writer. `--resume` restarts from the last complete one.

Writes go to the final directory and the COMPLETE marker is written last (atomically, by the runs module),
so a SIGKILL mid-save leaves an unmarked directory that resume, the evaluator and the dashboard ignore.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

__all__ = ["TRAINER_STATE", "save_checkpoint", "latest_checkpoint", "load_trainer_state"]

TRAINER_STATE = "trainer_state.pt"


def save_checkpoint(writer, step: int, model, tokenizer, optimizer, scheduler, generator: torch.Generator) -> Path:
    """Save the model (safetensors), tokenizer and trainer state for `step`; mark it complete last."""
    path = writer.checkpoint_dir(step)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    state = {"step": step, "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
             "generator": generator.get_state(), "torch_rng": torch.get_rng_state(),
             "python_rng": random.getstate()}
    tmp = path / f".tmp-{TRAINER_STATE}"
    torch.save(state, tmp)
    tmp.replace(path / TRAINER_STATE)
    writer.checkpoint_complete(step)
    return path


def latest_checkpoint(run_dir: Path) -> tuple[int, Path] | None:
    """(step, path) of the newest complete checkpoint that has trainer state, or None."""
    from dhpo_suite.runs import RunReader

    complete = RunReader(run_dir).checkpoints()
    usable = [(s, p) for s, p in complete.items() if (p / TRAINER_STATE).exists()]
    return max(usable) if usable else None


def load_trainer_state(path: Path, optimizer, scheduler, generator: torch.Generator) -> int:
    """Restore optimizer, scheduler and RNG state from a checkpoint dir; returns its step."""
    state = torch.load(path / TRAINER_STATE, weights_only=False)
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    generator.set_state(state["generator"])
    torch.set_rng_state(state["torch_rng"])
    random.setstate(state["python_rng"])
    return int(state["step"])
