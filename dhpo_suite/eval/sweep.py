"""`dhpo-suite eval --run RUN` over several checkpoints: each checkpoint in a fresh evaluator process.

vLLM does not reliably give back GPU memory when an engine is deleted, so evaluating checkpoint after
checkpoint in one process can run out of memory on the second. The parent re-invokes the CLI with
`--model CHECKPOINT --out RESULTS` and the user's other options, one child at a time, and reads each
child's summary.json for the combined table.
"""

from __future__ import annotations

import subprocess
import sys

from dhpo_suite.config_cli import to_argv

__all__ = ["child_argv", "run_child"]

_REPLACED = {"run", "steps", "out", "model", "shard", "in_process", "data_parallel_size"}


def child_argv(params, values: dict, model: str, out) -> list[str]:
    """The `eval` command line for one checkpoint: every option the user set (click `params` and their
    `values`), with --run/--steps/--out replaced by --model MODEL --out OUT."""
    args = ["eval", *to_argv(params, values, keep=lambda name: name not in _REPLACED)]
    return [sys.executable, "-m", "dhpo_suite.cli", *args, "--model", str(model), "--out", str(out)]


def run_child(argv: list[str]) -> int:
    """Run one child evaluator (its progress and logs on our stderr, its tables discarded); its exit code."""
    return subprocess.run(argv, stdout=subprocess.DEVNULL).returncode
