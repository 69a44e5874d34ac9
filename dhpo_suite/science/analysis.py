"""One comparison of a sweep, read once, for `dhpo-suite compare` and benchmarks/reproduction.py alike: the runs
(from their directories or from a kept-data folder, dhpo_suite.science.kept), the pre-registration (verified
against the digest sweep.json registered before the runs), the manipulation checks, and the tested contrasts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dhpo_suite.science import checks as chk
from dhpo_suite.science import compare as cmp
from dhpo_suite.science import contrasts, grid, kept, prereg

__all__ = ["Analysis", "analyse"]


@dataclass
class Analysis:
    source: Path
    metrics: pd.DataFrame
    scalars: pd.DataFrame
    problems: list[str]
    prereg: prereg.Prereg | None
    checks: chk.Checks | None
    contrasts: pd.DataFrame | None
    grid: grid.GridCheck | None = None


def analyse(source: Path, late_frac: float = 0.25, completed_only: bool = False) -> Analysis:
    """Everything compare prints about `source` (a sweep directory or a kept-data folder). PreregError when its
    prereg.json does not match the digest registered in sweep.json. The checks and contrasts read completed runs
    only; `completed_only`: the per-label tables too (a final value needs the last step)."""
    if kept.is_kept(source):
        metrics, scalars, problems = kept.load(source, late_frac)
    else:
        metrics, scalars, problems = cmp.load_sweep(source, late_frac, all_columns=True)
    if completed_only:
        metrics = metrics[metrics["status"] == "completed"].reset_index(drop=True)
        scalars = scalars[scalars["run"].isin(set(metrics["run"]))]
    registered = prereg.load(source, tuple(cmp.METRIC_DOCS))
    if registered is None:
        return Analysis(source, metrics, scalars, problems, None, None, None)
    columns = tuple(dict.fromkeys([registered.primary_metric, *(k.metric for k in registered.contrasts)]))
    grid_check = grid.check(source, metrics, scalars, columns, registered.grid)
    out = grid_check.excluded if grid_check else set()
    done = metrics[(metrics["status"] == "completed") & ~metrics["run"].isin(out)]  # finished, registered runs
    checks = chk.manipulation_checks(registered, scalars[scalars["run"].isin(set(done["run"]))], source)
    if grid_check is not None:  # named first: before any check or verdict
        checks.lines[:0] = grid_check.lines
    table = contrasts.evaluate(registered, done, checks.unresolvable, grid_check.refused if grid_check else None)
    return Analysis(source, metrics, scalars, problems, registered, checks, table, grid_check)
