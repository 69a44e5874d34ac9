"""Where the embedded trainer computes (--device) and in what precision (--precision), resolved once.

bf16 is where it matters on a GPU: the forward passes (rollout, log π_old, the update's forward) run under
`torch.autocast` (the backward, called outside it, replays their dtypes); the weights, AdamW's moments, the
log-softmax over the vocabulary (logprobs.py casts the logits up), the entropy, the objective and its loss stay
fp32, so the ratios π/π_old the objectives clip come from fp32 log-probs, as in verl's FSDP actor.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import ContextManager

import torch

__all__ = ["DEVICES", "PRECISIONS", "Compute", "resolve_compute"]

DEVICES = ("auto", "cpu", "cuda", "cuda:N")
PRECISIONS = ("auto", "fp32", "bf16")


@dataclass(frozen=True)
class Compute:
    """The resolved device and precision of a run."""

    device: torch.device
    precision: str  # "fp32" or "bf16"

    def autocast(self) -> ContextManager[None]:
        """The context the forward passes run in: bf16 autocast, or nothing for fp32."""
        if self.precision == "bf16":
            return torch.autocast(device_type=self.device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def describe(self) -> str:
        return f"{self.device} ({'bf16 autocast, fp32 weights' if self.precision == 'bf16' else 'fp32'})"


def resolve_compute(device: str, precision: str) -> Compute:
    """"auto" device: the first CUDA GPU torch sees, else the CPU; "auto" precision: bf16 on a GPU that supports
    it, else fp32. ValueError (one line, naming the option) for a device torch cannot use or an unknown name."""
    if device == "auto":
        dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        try:
            dev = torch.device(device)
        except RuntimeError:
            raise ValueError(f"device: {device!r} is not one of: {', '.join(DEVICES)}") from None
        if dev.type not in ("cpu", "cuda"):
            raise ValueError(f"device: {device!r} is not one of: {', '.join(DEVICES)}")
        if dev.type == "cuda":
            if not torch.cuda.is_available():
                raise ValueError(f"device: {device!r} but torch sees no CUDA GPU (torch {torch.__version__}, "
                                 f"CUDA build: {torch.version.cuda or 'none'}); use --device cpu or auto")
            if dev.index is not None and dev.index >= torch.cuda.device_count():
                raise ValueError(f"device: {device!r} but torch sees {torch.cuda.device_count()} CUDA GPU(s)")
    if precision not in PRECISIONS:
        raise ValueError(f"precision: {precision!r} is not one of: {', '.join(PRECISIONS)}")
    if precision == "auto":
        precision = "bf16" if dev.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    return Compute(dev, precision)
