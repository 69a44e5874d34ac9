"""The grid a verdict reads: the registered cells against the runs found, checked before any verdict (issue 46).

A registered sweep (OUT/sweep.json with a pre-registration, plus the sub-sweeps OUT/<sub>/sweep.json it holds)
names its cells: `<algo>[-<clip>]-s<seed>` under OUT or OUT/<sub> (the naming of dhpo_suite.train.sweep.Cell,
which tests/science/test_grid.py holds this copy to). `check` compares them with the runs compare found and
names, before any verdict:

- a registered cell with no run (never run, or deleted), or whose run did not complete;
- a run outside the registration (a directory no sweep.json names): never read by the checks or contrasts;
- a cell whose run is not the cell's (its manifest's seed or objective differs: a run copied over another);
- a (label, seed) seen twice (a run copied under another name: its seed would count twice);
- a non-finite held-out reward in a registered run (NaN or missing at its last step, where the trainer always
  evaluates, or ±inf at any step), or an infinite value of a metric the contrasts read.

What follows is the registration's `grid` field (dhpo_suite.science.prereg): "refuse" (the default) gives no
verdict while any of these holds (runs outside the registration are only excluded); "exclude" leaves the runs at
fault out, says which, and judges the rest (the contrasts pair over the seeds left).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["GRID_POLICIES", "GridCheck", "check", "registered_cells"]

GRID_POLICIES = ("refuse", "exclude")
HELDOUT = "eval/heldout_reward"


@dataclass(frozen=True)
class Cell:
    run: str  # the run's path under the sweep directory, as compare names runs
    algo: str
    clip: str | None
    seed: int

    def fits(self, label: str) -> bool:
        """Whether a run labelled `label` is of this cell's objective (and DHPO clip mode)."""
        base = f"{self.algo}-{self.clip}" if self.clip else self.algo
        return label == base or label.startswith((base + "-", base + " "))


@dataclass
class GridCheck:
    """Lines to print before the verdicts; why no verdict is given (None: verdicts stand); runs left out."""

    lines: list[str] = field(default_factory=list)
    refused: str | None = None
    excluded: set[str] = field(default_factory=set)


def _sweep_cells(path: Path, sub: str) -> list[Cell]:
    d = json.loads(path.read_text())
    prefix = f"{sub}/" if sub else ""
    clips = tuple(d.get("clips") or ())
    return [Cell(f"{prefix}{a}{'-' + c if c else ''}-s{s}", a, c, int(s)) for s in d["seeds"] for a in d["algos"]
            for c in (clips if a.startswith("dhpo") and clips else (None,))]


def registered_cells(source: Path) -> list[Cell] | None:
    """Every cell the sweep at `source` (a sweep directory or its kept data) and its sub-sweeps register; None
    when `source` holds no sweep.json."""
    if not (source / "sweep.json").exists():
        return None
    cells = _sweep_cells(source / "sweep.json", "")
    for sub in sorted(source.glob("*/sweep.json")):
        cells += _sweep_cells(sub, sub.parent.name)
    return cells


def check(source: Path, metrics: pd.DataFrame, scalars: pd.DataFrame, columns: tuple[str, ...],
          policy: str = "refuse") -> GridCheck | None:
    """The grid check of the module docstring; `columns`: the metrics the contrasts read. None: no sweep.json."""
    cells = registered_cells(source)
    if cells is None:
        return None
    g = GridCheck()
    by_run = {c.run: c for c in cells}
    found = metrics.set_index("run")
    faults: list[str] = []

    outside = sorted(set(found.index) - set(by_run))
    for run in outside:
        g.lines.append(f"grid: {run} ({found.at[run, 'label']} seed {found.at[run, 'seed']}) is outside the "
                       "registration (no sweep.json names it): not read by the checks or contrasts")
    g.excluded |= set(outside)
    for c in cells:
        if c.run not in found.index:
            faults.append(c.run)
            g.lines.append(f"grid: registered cell {c.run} ({c.algo} seed {c.seed}) has no run (never run, or "
                           "deleted)")
            continue
        row = found.loc[c.run]
        if row["seed"] != c.seed or not c.fits(str(row["label"])):
            faults.append(c.run)
            g.lines.append(f"grid: {c.run} holds {row['label']} seed {row['seed']} (its manifest), not the cell's "
                           f"{c.algo} seed {c.seed}: a run copied over another?")
        elif row["status"] != "completed":
            faults.append(c.run)
            g.lines.append(f"grid: registered cell {c.run} did not complete (status {row['status']}, "
                           f"{row['steps']} steps)")
    for (label, seed), runs in found.reset_index().groupby(["label", "seed"])["run"]:
        if len(runs) > 1:
            g.lines.append(f"grid: {label} seed {seed} is seen {len(runs)} times ({', '.join(sorted(runs))}): a run "
                           "copied under another name would count its seed twice")
            faults += [r for r in runs if r in by_run and r not in faults and len(set(runs) - set(outside)) > 1]
    evaluated = HELDOUT in scalars and scalars[HELDOUT].notna().any()  # the trainer evaluates at the last step
    for run in sorted(set(found.index) & set(by_run)):
        if found.at[run, "status"] != "completed":
            continue
        # ±inf only: a NaN metric can be by construction (residual_sd needs 4 evaluations); the held-out reward
        # itself is checked below, where NaN is never by construction
        bad = [m for m in columns if m in found and math.isinf(float(found.at[run, m]))]
        if evaluated:
            frame = scalars[scalars["run"] == run].sort_values("step")
            values = frame[HELDOUT].to_numpy(dtype=float)
            if len(values) and not np.isfinite(values[-1]):
                bad.append(f"{HELDOUT} at its last step {frame['step'].iloc[-1]} ({values[-1]}, or not logged)")
            elif np.isinf(values).any():
                bad.append(f"{HELDOUT} (±inf at a step)")
        if bad:
            faults.append(run)
            g.lines.append(f"grid: {run} has a non-finite {'; '.join(bad)}")
    _decide(g, sorted(set(faults)), policy, len(cells))
    return g


def _decide(g: GridCheck, faults: list[str], policy: str, n_cells: int) -> None:
    if not faults:
        g.lines.append(f"grid: each of the {n_cells} registered cells has one completed run of its own" + (
            f" ({len(g.excluded)} run(s) outside the registration left out)" if g.excluded else ""))
        return
    if policy == "exclude":
        g.excluded |= set(faults)
        g.lines.append(f"grid: as registered (grid: exclude), {len(faults)} run(s) at fault are left out of the "
                       f"checks and contrasts ({', '.join(faults)}); the contrasts pair over the seeds left")
        return
    g.refused = (f"the grid is not the registered one ({len(faults)} cell(s) at fault: {', '.join(faults)}; named "
                 "under the manipulation checks), and the registration says refuse")
    g.lines.append(f"grid: NO VERDICTS: {g.refused}")
