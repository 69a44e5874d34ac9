"""Deadlines for tests on a busy machine: a limit measured on a quiet machine, scaled by how busy this one is.

A test that waits for a process (an evaluator to store samples, a trainer to reach step 2, a Ray node to
register) fails on a loaded laptop only because everything runs slower, not because the code is wrong. The
slowdown is measured, not guessed: a fresh Python interpreter imports torch in a child process, and the ratio
of its wall time to the CPU time it used says how much of the wall clock the child waited for a core (about 1
on a quiet machine; ~N/cores with N runnable processes on the cores). Measured once per process (~2 s).
"""

from __future__ import annotations

import functools
import resource
import subprocess
import sys
import time

__all__ = ["MAX_SLOWDOWN", "scaled", "slowdown"]

MAX_SLOWDOWN = 20.0
"""Cap on the factor: a deadline still ends a hung test."""
_PROBE = "import torch, numpy; torch.ones(64, 64) @ torch.ones(64, 64)"


@functools.cache
def slowdown() -> float:
    """How many times slower than its CPU time a CPU-bound child runs now: >= 1, <= MAX_SLOWDOWN."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", _PROBE], check=False, capture_output=True, timeout=600)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return min(MAX_SLOWDOWN, max(1.0, wall / max(cpu, 1e-3)))


def scaled(seconds: float) -> float:
    """`seconds` (a limit that holds on a quiet machine) times the measured slowdown."""
    return seconds * slowdown()
