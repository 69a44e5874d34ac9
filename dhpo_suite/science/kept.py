"""Kept data: a sweep in a few committed files, from which `compare` and benchmarks/reproduction.py regenerate
every number without the run directories (issue #26: no interval could be re-derived from what was kept).

    DATA/runs.csv            one row per run: run (its path under the sweep), label, seed, status, algorithm,
                             started_at, ended_at, hparams (JSON), argv
    DATA/scalars.csv.gz      every run's step scalars, stacked (run, step, then the metrics in name order);
                             gzip without a timestamp, so the same sweep gives the same bytes
    DATA/metrics.csv         the per-run table of `dhpo-suite compare --csv`
    DATA/sweep.json, prereg.json, update_distance.json, <sub>/sweep.json   copied as they are
    DATA/kept.json           {"source": the sweep directory as named when exported} (for the report's commands)

Nothing machine-specific is kept: an absolute sweep directory is kept by its name, and each run's argv names
`dhpo-suite` and paths under the sweep relative to it (`portable`), so committed data reads the same anywhere.

`export` writes the folder from a sweep directory; `load` reads it back as compare.load_sweep would read the
runs (the same labels, seeds and metrics).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd

from dhpo_suite.science.compare import metrics_of, readable_runs, run_labels, stack

__all__ = ["COPIED", "RUNS_FILE", "SCALARS_FILE", "export", "is_kept", "load", "portable", "run_table"]

RUNS_FILE, SCALARS_FILE, METRICS_FILE = "runs.csv", "scalars.csv.gz", "metrics.csv"
COPIED = ("sweep.json", "prereg.json", "update_distance.json")
_GZIP = {"method": "gzip", "mtime": 0}


def is_kept(folder: Path) -> bool:
    return (folder / RUNS_FILE).exists() and (folder / SCALARS_FILE).exists()


def portable(argv: list[str], root: Path) -> list[str]:
    """A run's argv without this machine in it: the interpreter's script as `dhpo-suite`, paths under the sweep
    `root` relative to it (`--out /abs/sweep/grpo-s0` -> `--out grpo-s0`)."""
    out = ["dhpo-suite" if i == 0 and a.endswith(("dhpo_suite/cli.py", "dhpo-suite")) else a
           for i, a in enumerate(argv)]
    base = str(root.resolve()) + "/"
    return [a[len(base):] if a.startswith(base) else a for a in out]


def export(root: Path, dest: Path, late_frac: float = 0.25) -> list[str]:
    """Write the kept-data folder of sweep `root` into `dest`; returns the problems met reading the runs."""
    rows, frames, problems, manifests = [], [], [], []
    for summary, reader, frame in readable_runs(root, problems):
        if frame.empty:
            continue
        m = reader.manifest
        run = summary.path.relative_to(root).as_posix()
        manifests.append(m)
        rows.append({"run": run, "seed": m.seed, "status": m.status, "algorithm": m.algorithm,
                     "started_at": m.started_at, "ended_at": m.ended_at,
                     "hparams": json.dumps(m.hparams, sort_keys=True),
                     "argv": json.dumps(portable(list(m.argv), root))})
        frames.append(frame.assign(run=run))
    runs = pd.DataFrame(rows)
    runs.insert(1, "label", run_labels(manifests))
    dest.mkdir(parents=True, exist_ok=True)
    runs.to_csv(dest / RUNS_FILE, index=False)
    scalars = pd.concat(frames, ignore_index=True)
    metric_cols = sorted(c for c in scalars.columns if c not in ("run", "step"))
    scalars[["run", "step", *metric_cols]].sort_values(["run", "step"]).to_csv(
        dest / SCALARS_FILE, index=False, compression=_GZIP)
    for name in COPIED:
        if (root / name).exists():
            shutil.copyfile(root / name, dest / name)
    for sub in sorted(root.glob("*/sweep.json")):
        (dest / sub.parent.name).mkdir(exist_ok=True)
        shutil.copyfile(sub, dest / sub.parent.name / "sweep.json")
    # the sweep directory as the report's commands name it: relative as given, an absolute one by its name
    source = root.name if root.is_absolute() else root.as_posix()
    (dest / "kept.json").write_text(json.dumps({"source": source}) + "\n")
    load(dest, late_frac)[0].to_csv(dest / METRICS_FILE, index=False)
    return problems


def run_table(dest: Path) -> pd.DataFrame:
    """DATA/runs.csv (the runs' labels, seeds, statuses and wall-clock times)."""
    return pd.read_csv(dest / RUNS_FILE, dtype={"run": str, "label": str, "status": str})


def load(dest: Path, late_frac: float = 0.25) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """(metrics, scalars, problems) of a kept-data folder, as compare.load_sweep returns them for the runs."""
    runs = run_table(dest)
    scalars = pd.read_csv(dest / SCALARS_FILE, dtype={"run": str})
    frames = dict(tuple(scalars.groupby("run", sort=False)))
    tuples = [(r.run, r.label, int(r.seed), r.status, frames[r.run].drop(columns="run").reset_index(drop=True))
              for r in runs.itertuples() if r.run in frames]
    return metrics_of(tuples, late_frac), stack(tuples), []
