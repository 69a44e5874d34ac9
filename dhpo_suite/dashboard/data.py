"""Data loading for the pages: dhpo_suite.runs readers behind st.cache_data, keyed by path and mtime.

Every loader takes a `version` argument (modification times of what it reads), so a run that is still being
written is re-read only when its files change, and a finished run is read once. Per-step files (histograms,
outliers, samples) are loaded one step at a time, on demand, into bounded caches: memory grows with what is
looked at, not with the run's length. Loaders return (data, problems): `problems` are strings naming each
file that was missing or broken, which the page shows instead of failing.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import streamlit as st

from dhpo_suite.runs import RunFormatError, RunReader, TelemetrySpec, list_runs
from dhpo_suite.runs import eval_results as er
from dhpo_suite.runs.format import step_file

__all__ = ["mtime", "run_version", "step_versions", "evals_version", "runs_table", "list_runs", "scalars", "histograms",
           "outliers", "outlier_tables", "samples", "trust_bounds", "edge_bounds", "standalone_evals",
           "eval_summaries", "eval_samples"]

_TTL = 24 * 3600  # entries are keyed by mtime; the TTL only frees memory of runs no longer looked at
# Cache sizes bound memory: 32 views of histograms (≤ 120 steps × 3 of ~2 KB: ≤ 0.7 MB each), 64 steps of
# outliers and of samples (≤ ~0.1 MB each), 16 summaries' outliers (≤ 40 steps), 64 scalar tables (one per run;
# ~0.5 MB for 1000 steps).


def mtime(path: Path | str) -> int:
    """st_mtime_ns of a file or folder; 0 when it does not exist (so its later appearance changes the key)."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def run_version(run_dir: str) -> tuple:
    """Changes whenever the manifest is rewritten, a step is committed (scalars files are renamed into
    `scalars/`, which updates the folder's mtime), or a scalars file is changed in place: each file's size and
    mtime are part of it (issue 43: a scalars.parquet truncated in place kept the folder's mtime, and every
    page drew the old steps while the reader called the file unreadable). One stat per file of `scalars/`
    (compaction keeps them few)."""
    folder = Path(run_dir) / "scalars"
    try:
        files = tuple(sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder)))
    except OSError:
        files = ()
    return mtime(Path(run_dir) / "manifest.json"), mtime(folder), files


def evals_version(run_dir: str) -> tuple:
    """Changes when an evaluation of a checkpoint is written or rewritten (its summary.json): the Runs table's
    "evals" count is keyed by it, so it follows the "last eval AVG" beside it."""
    return tuple((step, mtime(Path(folder) / er.SUMMARY)) for step, folder in er.list_checkpoint_evals(run_dir).items())


@st.cache_data(max_entries=512, ttl=_TTL, show_spinner=False)
def _run_facts(run_dir: str, version: tuple, evals: tuple = ()) -> dict:
    """Manifest facts and step counts of one run (the Runs table row); `evals`: evals_version."""
    try:
        reader = RunReader(run_dir)
    except RunFormatError as e:
        return {"problems": [str(e)]}
    m = reader.manifest
    sc = reader.scalars(columns=["time"])
    hp = m.hparams
    return {
        "name": m.name or Path(run_dir).name, "algorithm": m.algorithm, "status": m.status,
        "clip": hp.get("clip", "branch" if m.algorithm.startswith("dhpo") else "—"),
        "mixing": hp.get("mixing", {"dhpo-a": "avg", "dhpo-e": "entropy"}.get(m.algorithm, "—")),
        "eps_low": hp.get("eps_low"), "eps_high": hp.get("eps_high"), "lr": hp.get("lr"),
        "group_size": hp.get("group_size"), "model": m.model, "task": m.task, "backend": m.backend, "seed": m.seed,
        "steps": len(sc), "last_step": int(sc["step"].max()) if len(sc) else None,
        "last_update": float(sc["time"].max()) if len(sc) and "time" in sc else None,
        "checkpoints": len(reader.checkpoints()), "evals": len(er.list_checkpoint_evals(run_dir)),
        "started_at": m.started_at, "error": m.error, "problems": [str(p) for p in reader.problems],
    }


def runs_table(root: str) -> pd.DataFrame:
    """One row per run under `root` (index: path relative to root), manifest facts + steps; runs whose
    manifest is broken are listed with status "invalid" and the reason in `problems`."""
    rows = {}
    for summary in list_runs(root):
        key = str(summary.path.relative_to(root)) if summary.path != Path(root) else summary.path.name
        facts = _run_facts(str(summary.path), run_version(str(summary.path)), evals_version(str(summary.path)))
        if summary.manifest is None:
            facts = {"name": summary.name, "status": "invalid", "problems": [summary.problem]}
        rows[key] = {"path": str(summary.path), **facts}
    cols = ["name", "algorithm", "clip", "mixing", "eps_low", "eps_high", "lr", "group_size", "model", "steps",
            "last_step", "status", "checkpoints", "evals", "task", "backend", "seed", "started_at", "last_update",
            "error", "problems", "path"]
    table = pd.DataFrame.from_dict(rows, orient="index").reindex(columns=cols)
    table.index.name = "run"
    return table


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def scalars(run_dir: str, version: tuple) -> tuple[pd.DataFrame, list[str]]:
    """Every committed step's scalars (one row per step)."""
    try:
        reader = RunReader(run_dir)
        frame = reader.scalars()
    except RunFormatError as e:
        return pd.DataFrame({"step": pd.Series([], dtype="int64")}), [str(e)]
    problems = [str(p) for p in reader.problems]
    if frame.empty:
        problems.append(f"{Path(run_dir) / 'scalars'}: no committed steps yet")
    return frame, problems


def _family(name: str) -> tuple[str, ...]:
    """The histograms read together with `name`: a branch's three log-ratio signs share one cache entry, so
    switching the advantage sign re-reads nothing."""
    if name.startswith("log_ratio/"):
        branch = name.split("/")[1]
        return tuple(f"log_ratio/{branch}/{s}" for s in ("pos", "neg", "zero"))
    return (name,)


def step_versions(run_dir: str, kind: str, steps: Sequence[int]) -> tuple[int, ...]:
    """The mtimes of `steps`' files of `kind` ("distributions", "outliers"): the cache key of a view of them."""
    return tuple(mtime(step_file(run_dir, kind, s)) for s in steps)


def _read_steps(run_dir: str, read: Callable[[RunReader, int], Any], steps: Sequence[int]) -> list:
    """`read(reader, step)` of every step, or the string naming what is wrong with its file (or the run's
    manifest). On a few threads: a view reads up to 120 small files, and pyarrow reads and decodes them without
    the GIL (a run switch on the Clipping page read them one by one before)."""
    try:
        reader = RunReader(run_dir)
    except RunFormatError as e:
        return [str(e)] * len(steps)

    def one(step: int) -> Any:
        try:
            return read(reader, step)
        except RunFormatError as e:
            return str(e)

    with ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1)) as pool:
        return list(pool.map(one, steps))


@st.cache_data(max_entries=32, ttl=_TTL, show_spinner=False)
def _step_histograms(run_dir: str, steps: tuple[int, ...], names: tuple[str, ...],
                     versions: tuple[int, ...]) -> dict[int, dict[str, tuple] | str]:
    """{step: {name: (edges, counts)} of its histograms `names` (one file read), or a string naming the file
    and what is wrong with it}. One entry per view (a heatmap's steps): a page rerun is one cache hit."""
    def read(reader: RunReader, step: int) -> dict[str, tuple]:
        return {n: (h.edges, h.counts) for n, h in reader.step_distributions(step, names).items()}

    return dict(zip(steps, _read_steps(run_dir, read, steps)))


def histograms(run_dir: str, steps: list[int], names: list[str],
               versions: tuple[int, ...] | None = None) -> tuple[dict[int, tuple], list[str]]:
    """{step: (edges, summed counts over `names`)} for the steps whose files are readable (names with the same
    edges, e.g. log_ratio/token/{pos,neg,zero}); problems name the others. One file read per step (cached).
    `versions`: step_versions of the distributions files, when the caller has them already."""
    family = tuple(dict.fromkeys(f for n in names for f in _family(n)))
    if versions is None:
        versions = step_versions(run_dir, "distributions", steps)
    out, problems = {}, []
    for s, got in _step_histograms(run_dir, tuple(int(s) for s in steps), family, versions).items():
        bad = [got] if isinstance(got, str) else [f"{step_file(run_dir, 'distributions', s)}: no distribution named "
                                                  f"{n!r}" for n in names if n not in got]
        if bad:
            problems += bad
            continue
        out[s] = (got[names[0]][0], np.sum([got[n][1] for n in names], axis=0))
    return out, list(dict.fromkeys(problems))


def _step_frame(kind: str, run_dir: str, step: int) -> tuple[pd.DataFrame, list[str]]:
    try:
        return getattr(RunReader(run_dir), kind)(int(step)), []
    except RunFormatError as e:
        return pd.DataFrame(), [str(e)]


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def _outliers(run_dir: str, step: int, version: int) -> tuple[pd.DataFrame, list[str]]:
    return _step_frame("outliers", run_dir, step)


def outliers(run_dir: str, step: int) -> tuple[pd.DataFrame, list[str]]:
    """The step's outlier tokens (cached per version of its file)."""
    return _outliers(run_dir, int(step), mtime(step_file(run_dir, "outliers", step)))


@st.cache_data(max_entries=16, ttl=_TTL, show_spinner=False)
def _outlier_tables(run_dir: str, steps: tuple[int, ...], columns: tuple[str, ...],
                    versions: tuple[int, ...]) -> tuple[pd.DataFrame, list[str]]:
    got = _read_steps(run_dir, lambda reader, step: reader.outlier_table(step, columns), steps)
    tables = [t for t in got if not isinstance(t, str)]
    return ((pa.concat_tables(tables).to_pandas() if tables else pd.DataFrame(columns=list(columns))),
            list(dict.fromkeys(p for p in got if isinstance(p, str))))


def outlier_tables(run_dir: str, steps: list[int], columns: Sequence[str]) -> tuple[pd.DataFrame, list[str]]:
    """The outlier rows of `steps` (their `columns`), stacked; problems name the files that could not be read
    (one cache entry per set of steps: a rerun of the page is one hit)."""
    return _outlier_tables(run_dir, tuple(int(s) for s in steps), tuple(columns),
                           step_versions(run_dir, "outliers", steps))


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def _samples(run_dir: str, step: int, version: int) -> tuple[pd.DataFrame, list[str]]:
    return _step_frame("responses", run_dir, step)


def samples(run_dir: str, step: int) -> tuple[pd.DataFrame, list[str]]:
    """Every recorded response of the step: the sampled ones and those outlier tokens come from (`source`);
    cached per version of its file."""
    return _samples(run_dir, int(step), mtime(step_file(run_dir, "samples", step)))


@st.cache_data(max_entries=512, ttl=_TTL, show_spinner=False)
def _recorded_regions(run_dir: str, step: int, version: int) -> dict | None:
    try:
        return RunReader(run_dir).trust_regions(int(step))
    except RunFormatError:
        return None


def trust_bounds(run_dir: str, step: int, branch: str, telemetry: dict) -> tuple[float | None, float | None] | None:
    """The branch's trust region at `step` in ratio space: (low, high), None for an unbounded side (CISPO has
    no lower bound); None when the branch has no trust region or nothing is readable. Read from the run
    (`low`/`high` of the distributions file); runs written before those columns existed fall back to the
    log-ratio bin edges, where a one-sided region shows mirrored."""
    version = mtime(step_file(run_dir, "distributions", step))
    regions = _recorded_regions(run_dir, int(step), version)
    if regions is not None and branch in regions:
        low, high = regions[branch]
        return None if low is None and high is None else (low, high)
    hists, _ = histograms(run_dir, [step], [f"log_ratio/{branch}/pos"])
    return edge_bounds(hists[step][0], telemetry) if step in hists else None


def edge_bounds(edges: np.ndarray, telemetry: dict) -> tuple[float, float]:
    """The trust region (ratio space) inferred from log-ratio bin edges: the writer lays them out with
    log(1−ε_low) and log(1+ε_high) as exact edges after `log_ratio_outside_bins` outside bins."""
    spec = TelemetrySpec.from_dict(telemetry) if telemetry else TelemetrySpec()
    n_out, n_in = spec.log_ratio_outside_bins, spec.log_ratio_inside_bins
    return float(np.exp(edges[n_out])), float(np.exp(edges[n_out + n_in]))


@st.cache_data(max_entries=128, ttl=_TTL, show_spinner=False)
def manifest_telemetry(run_dir: str, version: tuple) -> dict:
    try:
        return RunReader(run_dir).manifest.telemetry
    except RunFormatError:
        return {}


@st.cache_data(max_entries=256, ttl=_TTL, show_spinner=False)
def summary(path: str, version: int) -> dict | str:
    try:
        return er.read_json(path)
    except RunFormatError as e:
        return str(e)


def standalone_evals(root: str, max_depth: int = 3) -> dict[str, str]:
    """{path relative to root: folder} of evaluations outside any run (`dhpo-suite eval --out DIR` under the
    runs directory, e.g. the base model): folders with a summary.json whose ancestors hold no manifest.json."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if "manifest.json" in filenames or len(here.relative_to(root).parts) >= max_depth:
            dirnames.clear()
            continue
        if er.SUMMARY in filenames and here != Path(root):
            found[str(here.relative_to(root))] = str(here)
            dirnames.clear()
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return found


def eval_summaries(run_dir: str) -> tuple[dict[int, tuple[str, dict]], list[str]]:
    """{step: (eval dir, summary)} of a run's checkpoint evaluations; problems name unreadable summaries."""
    out, problems = {}, []
    for step, folder in er.list_checkpoint_evals(run_dir).items():
        path = Path(folder) / er.SUMMARY
        s = summary(str(path), mtime(path))
        if isinstance(s, str):
            problems.append(s)
        else:
            out[step] = (str(folder), s)
    return out, problems


@st.cache_data(max_entries=64, ttl=_TTL, show_spinner=False)
def _eval_samples(eval_dir: str, bench: str, version: tuple) -> tuple[list[dict], list[str]]:
    try:
        read = er.read_bench_samples(eval_dir, bench)
    except RunFormatError as e:
        return [], [str(e)]
    return read.records, [str(p) for p in read.skipped]


def eval_samples(eval_dir: str, bench: str) -> tuple[list[dict], list[str]]:
    """Every graded sample of one benchmark of one evaluation: the samples file and the shard files of
    `dhpo-suite eval --dp` (a torn last line is skipped and reported)."""
    files = er.bench_sample_files(eval_dir, bench)
    if not files:
        return [], [f"{er.samples_path(eval_dir, bench)}: missing"]
    return _eval_samples(str(eval_dir), bench, tuple((str(f), mtime(f)) for f in files))
