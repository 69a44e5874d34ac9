"""Fixture runs for the dashboard tests (written once per session through dhpo_suite.runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.dashboard.fixture_runs import write_eval_dir, write_run

from dhpo_suite.runs.format import step_file


@pytest.fixture(scope="session")
def runs_root(tmp_path_factory) -> Path:
    """dhpo-e (entropy and length collapse at step 18), grpo (no collapse), live (still running), and an
    evaluation outside any run (evals/base-model)."""
    root = tmp_path_factory.mktemp("runs")
    write_run(root / "dhpo-e", steps=30, collapse_at=18)
    write_run(root / "grpo", steps=30, algo="grpo", seed=1)
    write_run(root / "live", steps=12, close=None, eval_every=0)
    write_eval_dir(root / "evals" / "base-model", 0.05)  # an evaluation outside any run (e.g. the base model)
    return root


@pytest.fixture(scope="session")
def damaged_root(tmp_path_factory) -> Path:
    """A broken manifest, a run with no steps, and a run with a corrupt and a missing per-step file."""
    root = tmp_path_factory.mktemp("damaged")
    bad = root / "bad-manifest"
    bad.mkdir()
    (bad / "manifest.json").write_text('{"algorithm": "grpo",\n "status": }')
    write_run(root / "empty", steps=0, close=None)
    run = write_run(root / "partial", steps=8, eval_every=3)
    step_file(run, "distributions", 3).write_bytes(b"PAR1 torn")
    step_file(run, "samples", 7).unlink()
    step_file(run, "outliers", 7).write_bytes(b"")
    with (run / "evals" / "step-000006" / "aime24.samples.jsonl").open("a") as f:
        f.write('{"bench": "aime24", "probl')  # a torn last line, as a killed evaluator leaves it
    (run / "evals" / "step-000003" / "summary.json").write_text(json.dumps({"benchmarks": {}})[:-3])
    return root
