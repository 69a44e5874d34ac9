"""Fixtures for the grader's tests: one shared worker pool and the real benchmark files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from dhpo_suite.grading import GraderPool

BENCHES = ("aime24", "aime25", "amc23", "gsm8k", "math500", "minerva_math", "olympiadbench")


def benchmarks_dir() -> Path:
    env = os.environ.get("DHPO_BENCHMARKS_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "benchmarks"


def load_bench(name: str) -> list[dict]:
    path = benchmarks_dir() / f"{name}.jsonl"
    if not path.is_file():
        pytest.skip(f"benchmark file {path} not present (set DHPO_BENCHMARKS_DIR)")
    return [json.loads(line) for line in path.open(encoding="utf-8")]


@pytest.fixture(scope="session")
def pool():
    """Two workers with a generous limit (the CPU is shared); tests that need a timeout set one."""
    with GraderPool(workers=2, timeout=20.0) as shared:
        yield shared
