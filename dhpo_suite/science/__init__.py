"""Science across seeds (docs/sweep.md): the analysis layer under `dhpo-suite compare` and the dashboard.

It reads run directories through `dhpo_suite.runs` and imports nothing else of the package (pandas, numpy, scipy;
no torch, no Streamlit: tests/test_architecture.py). Callers outside it use this face only:

    from dhpo_suite import science
    a = science.analyse(sweep_dir)                   # everything `dhpo-suite compare` prints, read once
    c = science.detect_collapse(entropy, length)     # the entropy-collapse verdict of one run (science.verdict(c))

and, for a selection of runs already read (the dashboard's Sweep page), the steps `analyse` is made of:
`metrics_of` (per-run metrics), `summarize` (per-label intervals), `paired_differences`, `curve_bands`,
`run_labels` / `group_labels` (which runs are averaged together).

Modules: compare.py (per-run metrics, intervals), stats.py (paired statistics), prereg.py, checks.py, contrasts.py,
analysis.py, collapse.py, groups.py, kept.py, tables.py (formatting), cli.py (`dhpo-suite compare`). The names
load on first use, so `dhpo-suite --help` does not import scipy.
"""

from __future__ import annotations

import importlib
from typing import Any

FACE = {
    "analyse": "analysis", "Analysis": "analysis",
    "detect_collapse": "collapse", "verdict": "collapse", "Collapse": "collapse", "CollapseRule": "collapse",
    "metrics_of": "compare", "summarize": "compare", "paired_differences": "compare", "curve_bands": "compare",
    "run_labels": "compare", "Interval": "compare", "METRIC_DOCS": "compare", "HELDOUT": "compare",
    "HELDOUT_INITIAL": "compare",
    "group_labels": "groups", "run_settings": "groups", "differing": "groups", "one_apart_from": "groups",
    "seed_means": "groups", "run_leak": "leak",
    "fmt_interval": "tables",
}
"""Public name -> the module of dhpo_suite.science that defines it."""

__all__ = sorted(FACE)


def __getattr__(name: str) -> Any:
    if name not in FACE:
        raise AttributeError(f"module 'dhpo_suite.science' has no attribute {name!r}")
    return getattr(importlib.import_module(f"dhpo_suite.science.{FACE[name]}"), name)
