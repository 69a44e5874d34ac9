"""Is a checkpoint's trainer state usable with its model? Checked before training, so `--resume` can fall back.

A trainer_state.pt that unpickles cleanly can still be wrong for the run: optimizer moments of another shape
(PyTorch's `Optimizer.load_state_dict` checks only the number of parameters per group, and the first update then
fails with "The size of tensor a ... must match"), another number of parameter groups, an RNG state of the
wrong size ("not enough values to unpack"), a NaN learning rate, or NaN weights (the first sample then fails
with "probability tensor contains either inf, nan"). Each of these used to surface minutes into the run, after
the previous checkpoint, which would have worked, was passed over. `check_state` needs only the file's data;
`check_against_model` compares it with the model the checkpoint's weights built. Both raise CheckpointError
naming the file and the field.
"""

from __future__ import annotations

import math
import random
from numbers import Number
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from torch import nn

__all__ = ["CheckpointError", "check_against_model", "check_state", "python_rng"]

_GROUP_NUMBERS = ("lr", "eps", "weight_decay", "initial_lr")
_MOMENTS = ("exp_avg", "exp_avg_sq")


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message starts with the file or directory (re-exported by
    checkpoint.py, which imports this module)."""


def python_rng(value: Any) -> tuple[Any, ...]:
    """random.getstate()'s (version, tuple of ints, gauss) back from the loaded containers."""
    version, internal, gauss = value
    return int(version), tuple(int(x) for x in internal), gauss


def _error(file: Path, field: str, what: str) -> CheckpointError:
    return CheckpointError(f"{file}: {field}: {what}")


def _finite_number(x: Any) -> bool:
    return isinstance(x, Number) and not isinstance(x, bool) and math.isfinite(float(x))  # type: ignore[arg-type]


def check_state(state: dict[str, Any], file: Path) -> None:
    """The checks that need the file alone: RNG state sizes, one AdamW parameter group with finite numbers,
    a LambdaLR state with finite rates, and each parameter's moments of one shape and finite."""
    _check_rng(state, file)
    _check_optimizer(state["optimizer"], file)
    _check_scheduler(state["scheduler"], file)


def _check_rng(state: dict[str, Any], file: Path) -> None:
    expected = torch.Generator().get_state()  # the CPU generator's state: 5056 uint8 values
    for key in ("generator", "torch_rng"):
        value = state[key]
        if not isinstance(value, torch.Tensor) or value.dtype != expected.dtype or value.shape != expected.shape:
            got = f"{value.dtype} {list(value.shape)}" if isinstance(value, torch.Tensor) else type(value).__name__
            raise _error(file, key, f"not a CPU RNG state (expected {expected.dtype} {list(expected.shape)}, "
                                    f"got {got})")
    try:
        random.Random().setstate(python_rng(state["python_rng"]))  # a throwaway generator: validates only
    except (TypeError, ValueError) as e:
        raise _error(file, "python_rng", f"not a Python random state ({e})") from None


def _check_optimizer(opt: Any, file: Path) -> None:
    if not isinstance(opt, dict) or not isinstance(opt.get("param_groups"), list) or not isinstance(
            opt.get("state"), dict):
        raise _error(file, "optimizer", "not an optimizer state (expected 'state' and 'param_groups')")
    groups = opt["param_groups"]
    if len(groups) != 1:
        raise _error(file, "optimizer.param_groups", f"{len(groups)} groups; the trainer's AdamW has 1")
    group = groups[0]
    for key in _GROUP_NUMBERS:
        if key in group and not _finite_number(group[key]):
            raise _error(file, f"optimizer.param_groups[0].{key}", f"must be a finite number, got {group[key]!r}")
    if not isinstance(group.get("params"), list):
        raise _error(file, "optimizer.param_groups[0].params", "missing")
    for index, moments in opt["state"].items():
        _check_moments(index, moments, file)


def _check_moments(index: Any, moments: Any, file: Path) -> None:
    field = f"optimizer.state[{index}]"
    if not isinstance(moments, dict) or any(not isinstance(moments.get(k), torch.Tensor) for k in _MOMENTS):
        raise _error(file, field, "expected the AdamW moments exp_avg and exp_avg_sq")
    a, b = moments["exp_avg"], moments["exp_avg_sq"]
    if a.shape != b.shape:
        raise _error(file, field, f"exp_avg {list(a.shape)} and exp_avg_sq {list(b.shape)} differ in shape")
    step = moments.get("step")
    if not (isinstance(step, torch.Tensor) and step.numel() == 1 and torch.isfinite(step).all()):
        raise _error(file, f"{field}.step", "must be a finite scalar tensor")
    for k in _MOMENTS:
        if not torch.isfinite(moments[k]).all():
            raise _error(file, f"{field}.{k}", "holds NaN or infinite values")


def _check_scheduler(sched: Any, file: Path) -> None:
    if not isinstance(sched, dict) or not isinstance(sched.get("last_epoch"), int):
        raise _error(file, "scheduler", "not a learning-rate scheduler state (no integer last_epoch)")
    for key in ("base_lrs", "_last_lr"):
        values = sched.get(key, [])
        if not isinstance(values, list) or len(values) != 1 or not all(_finite_number(v) for v in values):
            raise _error(file, f"scheduler.{key}", f"must be one finite rate per parameter group (1), got {values!r}")


def check_against_model(state: dict[str, Any], model: nn.Module, file: Path) -> None:
    """The state matches `model`: one optimizer entry per parameter, each moment of its parameter's shape; and
    the model's weights (read from the checkpoint's safetensors) are finite."""
    named = list(model.named_parameters())
    params = state["optimizer"]["param_groups"][0]["params"]
    if len(params) != len(named):
        raise _error(file, "optimizer.param_groups[0].params", f"{len(params)} parameters; the model has "
                                                               f"{len(named)}")
    for index, moments in state["optimizer"]["state"].items():
        if not isinstance(index, int) or not 0 <= index < len(named):
            raise _error(file, f"optimizer.state[{index!r}]", f"no such parameter (the model has {len(named)})")
        name, p = named[index]
        if moments["exp_avg"].shape != p.shape:
            raise _error(file, f"optimizer.state[{index}].exp_avg", f"shape {list(moments['exp_avg'].shape)}, but "
                                                                    f"the model's {name} is {list(p.shape)}")
    for name, p in named:
        if not torch.isfinite(p.detach()).all():
            raise _error(file.parent, name, "the weights hold NaN or infinite values")
