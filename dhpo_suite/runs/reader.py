"""RunReader and list_runs: the read side of the run directory (used by the dashboard; no torch).

Bulk loaders (`scalars`, `steps`, `distributions` over many steps, `list_runs`) skip a broken file, keep
going and record a `Problem` naming it in `.problems`. Single-step loaders raise `RunFormatError` naming the
file. A step exists once its scalars row exists; files of a step killed mid-write are ignored.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .format import (
    MANIFEST,
    SCALARS_COMPACT,
    Problem,
    RunFormatError,
    complete_checkpoints,
    parse_step_file,
    sorted_step_files,
    step_file,
)
from .manifest import Manifest, read_manifest
from .records import (
    DISTRIBUTION_OPTIONAL,
    SAMPLE_OPTIONAL,
    DISTRIBUTION_SCHEMA,
    OUTLIER_SCHEMA,
    SAMPLE_SCHEMA,
    Histogram,
    StepRecord,
    histograms_from_table,
)

__all__ = ["RunReader", "RunSummary", "list_runs"]

HISTOGRAM_COLUMNS = ["name", "edges", "y_edges", "counts"]
"""What rebuilding a histogram reads of a distributions file (not its step, nor the trust region's bounds)."""


class RunReader:
    """Read one run directory. `problems` lists every file the bulk loaders skipped and why."""

    def __init__(self, run_dir: Path | str):
        self.run_dir = Path(run_dir)
        self.manifest: Manifest = read_manifest(self.run_dir)
        self.problems: list[Problem] = []

    # ---- scalars ----
    def scalars(self, columns: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per committed step, sorted by step: `step`, `time` (unix s) and every metric column.

        `columns` limits the metrics read (step is always included). Broken files are skipped (see problems).
        """
        cols = None if columns is None else ["step", *[c for c in columns if c != "step"]]
        tables = self._scalar_tables(cols)
        if not tables:
            return pd.DataFrame({"step": pd.Series([], dtype="int64")})
        df = pa.concat_tables(tables, promote_options="permissive").to_pandas()
        df = df.drop_duplicates("step", keep="last").sort_values("step", kind="stable")
        return df.reset_index(drop=True)

    def steps(self) -> list[int]:
        """Committed steps with a readable scalars row, ascending (consistent with `scalars()`)."""
        return [int(s) for s in self.scalars()["step"]]

    def _scalar_tables(self, columns: list[str] | None) -> list[pa.Table]:
        folder = self.run_dir / "scalars"
        for _attempt in range(20):  # a concurrent compaction may delete files we listed: list again
            per_step = sorted_step_files(_listdir(folder))
            tables: list[pa.Table] = []
            for aside in (p for p in _listdir(folder) if p.name.startswith(f"{SCALARS_COMPACT}.corrupt-")):
                self._problem(aside, "compacted scalars were unreadable and set aside by the writer; "
                                     "the steps they held are missing")
            try:
                compact = folder / SCALARS_COMPACT
                if compact.exists():
                    self._append(tables, compact, columns)
                for p in per_step:  # after the compacted file, so per-step rows win on duplicates
                    self._append(tables, p, columns, expect_step=parse_step_file(p))
                return tables
            except FileNotFoundError:
                continue
        raise RunFormatError(folder, "scalar files kept changing while reading (is a writer compacting?)")

    def _append(self, tables: list[pa.Table], path: Path, columns: list[str] | None,
                expect_step: int | None = None) -> None:
        try:
            tables.append(read_scalars_file(path, columns, expect_step))
        except RunFormatError as e:
            self._problem(e.path, e.reason)

    # ---- per-step files ----
    def distributions(self, steps: int | Iterable[int] | None, name: str) -> Histogram | dict[int, Histogram]:
        """Histogram `name` at one step (int), or {step: Histogram} over `steps` (None: every step).

        Names: see `distribution_names` / docs/run-format.md. Over many steps, broken files are skipped
        and reported in `problems`; for one step they raise RunFormatError.
        """
        if isinstance(steps, int):
            return self._distribution(steps, name)
        out: dict[int, Histogram] = {}
        for s in self.steps() if steps is None else steps:
            try:
                out[int(s)] = self._distribution(int(s), name)
            except RunFormatError as e:
                self._problem(e.path, e.reason)
        return out

    def step_distributions(self, step: int, names: Iterable[str] | None = None) -> dict[str, Histogram]:
        """Every histogram of one step, or those in `names`, {name: Histogram}: one file read.

        Much cheaper than `distributions(step, name)` once per name (each of those is a filtered read).
        """
        table = self._step_table("distributions", step, DISTRIBUTION_SCHEMA, HISTOGRAM_COLUMNS)
        if names is not None:
            table = table.filter(pc.is_in(table.column("name"), pa.array(list(names), pa.string())))
        return self._histograms(step, table)

    def trust_regions(self, step: int) -> dict[str, tuple[float | None, float | None]] | None:
        """{branch: (low, high)} of one step in ratio space, None for an unbounded side (both None: the
        branch has no trust region); None when the run predates recorded trust regions (infer them from
        the log-ratio bin edges then)."""
        path = step_file(self.run_dir, "distributions", step)
        try:
            table = _read_parquet(path, ["name", *DISTRIBUTION_OPTIONAL])
        except FileNotFoundError:
            raise RunFormatError(path, "missing") from None
        if not set(DISTRIBUTION_OPTIONAL) <= set(table.column_names):
            return None
        rows = zip(*(table.column(c).to_pylist() for c in ("name", *DISTRIBUTION_OPTIONAL)))
        return {name.split("/")[1]: (low, high) for name, low, high in rows
                if isinstance(name, str) and name.startswith("log_ratio/")}

    def _histograms(self, step: int, table: pa.Table) -> dict[str, Histogram]:
        try:
            return histograms_from_table(table)
        except ValueError as e:  # counts that do not fit the edges
            raise RunFormatError(step_file(self.run_dir, "distributions", step), str(e)) from None

    def distribution_names(self, step: int) -> list[str]:
        table = self._step_table("distributions", step, DISTRIBUTION_SCHEMA, columns=["name"])
        return sorted(table.column("name").to_pylist())

    def _distribution(self, step: int, name: str) -> Histogram:
        path = step_file(self.run_dir, "distributions", step)
        table = self._step_table("distributions", step, DISTRIBUTION_SCHEMA, filters=[("name", "=", name)])
        hists = self._histograms(step, table) if table.num_rows else {}
        if name not in hists:
            raise RunFormatError(path, f"no distribution named {name!r}")
        return hists[name]

    def outliers(self, step: int) -> pd.DataFrame:
        """Outlier tokens of one step (OUTLIER_SCHEMA), ordered by branch then distance (largest first)."""
        return self.outlier_table(step).to_pandas()

    def outlier_table(self, step: int, columns: Sequence[str] | None = None) -> pa.Table:
        """`outliers` as an Arrow table, of `columns` only if given: many steps stack as Arrow and convert to
        pandas once (a conversion per 16-row step cost more than reading it)."""
        return self._step_table("outliers", step, OUTLIER_SCHEMA, None if columns is None else list(columns))

    def samples(self, step: int) -> pd.DataFrame:
        """Sampled responses of one step (SAMPLE_SCHEMA, the hash draw): per-token arrays are list cells."""
        df = self.responses(step)
        return df[df["source"] == "sample"].reset_index(drop=True)

    def responses(self, step: int) -> pd.DataFrame:
        """Every recorded response of one step: the sampled ones (`source` "sample"), then those outlier tokens
        come from (`source` "outlier"; files written before these were recorded have none)."""
        df = self._step_table("samples", step, SAMPLE_SCHEMA).to_pandas()
        return df.assign(source=df["source"].fillna("sample"))

    def record(self, step: int) -> StepRecord:
        """The full StepRecord of one step, as written (round trip of RunWriter.write_step)."""
        row = self.scalars()
        row = row[row["step"] == step]
        if row.empty:
            raise KeyError(f"{self.run_dir}: step {step} is not committed")
        scalars = {k: float(v) for k, v in row.iloc[0].items() if k not in ("step", "time") and pd.notna(v)}
        dists = self.step_distributions(step)
        outl = self._step_table("outliers", step, OUTLIER_SCHEMA).drop_columns(["step"]).to_pylist()
        rows = self._step_table("samples", step, SAMPLE_SCHEMA).drop_columns(["step"]).to_pylist()
        samp: list[dict[str, Any]] = []
        from_outliers: list[dict[str, Any]] = []
        for r in rows:  # optional columns that were not written are left out, as in the record written
            (from_outliers if r.pop("source") == "outlier" else samp).append(
                {k: v for k, v in r.items() if k not in SAMPLE_OPTIONAL or v is not None})
        return StepRecord(step, scalars, dists, outl, samp, self.trust_regions(step) or {}, from_outliers)

    def _step_table(self, kind: str, step: int, schema: pa.Schema, columns: list[str] | None = None,
                    filters: list[tuple[str, str, Any]] | None = None) -> pa.Table:
        path = step_file(self.run_dir, kind, step)
        try:
            table = _read_parquet(path, columns, filters)
        except FileNotFoundError:
            raise RunFormatError(path, "missing") from None
        expected = schema if columns is None else pa.schema([schema.field(c) for c in columns])
        optional = {"distributions": DISTRIBUTION_OPTIONAL, "samples": SAMPLE_OPTIONAL}.get(kind, ())
        for f in expected:  # optional columns of older files read as nulls
            if f.name in optional and f.name not in table.column_names:
                table = table.append_column(f, pa.nulls(table.num_rows, f.type))
        missing = [f.name for f in expected if f.name not in table.column_names]
        if missing:
            raise RunFormatError(path, f"unexpected schema: missing columns {missing}")
        table = table.select(expected.names)  # extra columns (a later additive format change) are ignored
        wrong = [f"{f.name} ({table.schema.field(f.name).type}, expected {f.type})"
                 for f in expected if not table.schema.field(f.name).type.equals(f.type)]
        if wrong:
            raise RunFormatError(path, f"unexpected schema: wrong column types {wrong}")
        return table

    # ---- checkpoints ----
    def checkpoints(self) -> dict[int, Path]:
        """{step: path} of checkpoints whose COMPLETE marker exists (half-written ones are left out)."""
        return complete_checkpoints(self.run_dir)

    def _problem(self, path: Path, reason: str) -> None:
        p = Problem(Path(path), reason)
        if p not in self.problems:
            self.problems.append(p)


def read_scalars_file(path: Path, columns: list[str] | None = None, expect_step: int | None = None) -> pa.Table:
    """A scalars Parquet file, checked: integer `step` (exactly [expect_step] for a per-step file), numeric
    metric columns. RunFormatError naming the file otherwise (FileNotFoundError passes through)."""
    t = _read_parquet(path, columns)
    if "step" not in t.column_names or not pa.types.is_integer(t.schema.field("step").type):
        raise RunFormatError(path, "no integer 'step' column")
    if t.column("step").null_count:
        raise RunFormatError(path, "null step")
    if expect_step is not None and t.column("step").to_pylist() != [expect_step]:
        raise RunFormatError(path, f"expected one row for step {expect_step}")
    bad = [f.name for f in t.schema
           if not (pa.types.is_floating(f.type) or pa.types.is_integer(f.type) or pa.types.is_null(f.type))]
    if bad:
        raise RunFormatError(path, f"non-numeric metric column(s) {bad}")
    return t


def _listdir(folder: Path) -> list[Path]:
    try:
        return [folder / n for n in os.listdir(folder) if not n.startswith(".")]
    except FileNotFoundError:
        return []


def _read_parquet(path: Path, columns: list[str] | None = None,
                  filters: list[tuple[str, str, Any]] | None = None) -> pa.Table:
    """Read a Parquet file; errors become RunFormatError naming the file, except FileNotFoundError, which
    passes so that callers can tell "compacted away meanwhile" (retry) from "broken"."""
    try:
        if filters is None:  # ParquetFile skips the dataset layer: ~2x faster for small files
            f = pq.ParquetFile(path)
            names = set(f.schema_arrow.names)
            # one thread: a step's file is small, and pyarrow's pool cost more than it saved (0.77x the time
            # for a heatmap's 120 files); callers that read many files run their own pool
            return f.read(columns=None if columns is None else [c for c in columns if c in names], use_threads=False)
        return pq.read_table(path, columns=columns, filters=filters)
    except FileNotFoundError:
        raise
    except (pa.ArrowException, OSError, ValueError, KeyError) as e:
        raise RunFormatError(path, f"unreadable Parquet ({type(e).__name__}: {e})") from None


@dataclass(frozen=True)
class RunSummary:
    """One entry of list_runs. `manifest` is None and `problem` says why when the manifest is broken."""

    path: Path
    name: str
    manifest: Manifest | None
    problem: str | None = None

    @property
    def status(self) -> str:
        return "invalid" if self.manifest is None else self.manifest.status


def list_runs(root: Path | str, max_depth: int = 3) -> list[RunSummary]:
    """Every run directory (a folder with manifest.json) under `root`, up to `max_depth` levels, by path.

    A run's own subfolders are not searched. Broken manifests are listed with `problem` set, not hidden.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"{root}: runs root is not a directory")
    found: list[RunSummary] = []
    # links followed: a folder of links to runs kept elsewhere is a comparison; max_depth bounds a loop
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        here = Path(dirpath)
        depth = len(here.relative_to(root).parts)
        if MANIFEST in filenames:
            dirnames.clear()
            try:
                m = read_manifest(here)
                found.append(RunSummary(here, m.name or here.name, m))
            except RunFormatError as e:
                found.append(RunSummary(here, here.name, None, str(e)))
        elif depth >= max_depth:
            dirnames.clear()
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    return sorted(found, key=lambda r: str(r.path))
