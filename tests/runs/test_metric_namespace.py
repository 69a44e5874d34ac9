"""Every scalar a record can hold is defined once in METRICS and mirrored in docs/run-format.md."""

from __future__ import annotations

import re
from pathlib import Path

from dhpo_suite.runs.metrics import BRANCHES, METRICS
from dhpo_suite.testing.synthetic_runs import ALGO_BOUNDS, synthetic_record

DOC = Path(__file__).resolve().parents[2] / "docs" / "run-format.md"


def _generic(name: str) -> str:
    return re.sub(rf"/({'|'.join(BRANCHES)})/", "/{b}/", name)


def test_every_metric_is_documented():
    doc = DOC.read_text()
    missing = sorted({_generic(n) for n in METRICS if f"`{_generic(n)}`" not in doc})
    assert not missing, f"docs/run-format.md lacks {missing}"


def test_records_hold_only_defined_metrics():
    for algo in ALGO_BOUNDS:
        names = set(synthetic_record(1, algo, 0).scalars)
        assert names <= set(METRICS), (algo, sorted(names - set(METRICS)))
