"""`grade()`: one call, no setup. A module-level pool is created on first use and closed at exit."""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Sequence

from dhpo_suite.grading.pool import GraderPool
from dhpo_suite.grading.verdict import Verdict

__all__ = ["grade"]

_pool: GraderPool | None = None
_lock = threading.Lock()


def grade(response: str, gold: str | Sequence[str], bench: str | None = None,
          timeout: float = 5.0) -> Verdict:
    """Verdict for `response` against a gold string or a list of accepted golds.

    Runs in a lazily created one-worker pool (model text is never parsed in this process); for
    batches use `GraderPool.grade_many`, which grades in parallel.
    """
    return _default_pool().grade(response, gold, bench, timeout=timeout)


def _default_pool() -> GraderPool:
    global _pool
    with _lock:
        if _pool is None or _pool._owner != os.getpid():  # a forked child builds its own
            _pool = GraderPool(workers=1)
            atexit.register(_pool.close)
        return _pool
