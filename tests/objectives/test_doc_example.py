"""docs/objectives.md's first example runs as written (issue 28: it once named an attribute that no longer exists)."""

from __future__ import annotations

import re
from pathlib import Path

import torch

DOC = Path(__file__).parents[2] / "docs" / "objectives.md"


def test_the_usage_example_runs():
    code = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    g = torch.Generator().manual_seed(0)
    log_prob = torch.randn(32, 6, generator=g, requires_grad=True)
    scope = {"rewards": torch.rand(32, generator=g), "log_prob": log_prob,
             "old_log_prob": log_prob.detach() + 0.3 * torch.randn(32, 6, generator=g),
             "response_mask": torch.ones(32, 6, dtype=torch.bool), "entropy": torch.rand(32, 6, generator=g)}
    exec(compile(code, str(DOC), "exec"), scope)
    assert log_prob.grad is not None and torch.isfinite(log_prob.grad).all()
    assert scope["out"].branches["token"].clip_high.dtype == torch.bool
