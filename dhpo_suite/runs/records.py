"""The step record: what one training step leaves in the run directory, and its Parquet tables.

A `StepRecord` is plain Python/numpy (no torch) so the dashboard, the synthetic-run generator and an offline
merge of per-rank partials all use it. Schemas are fixed here; docs/run-format.md mirrors them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

__all__ = [
    "Histogram",
    "StepRecord",
    "OUTLIER_SCHEMA",
    "SAMPLE_SCHEMA",
    "DISTRIBUTION_SCHEMA",
    "SAMPLE_OPTIONAL",
    "CLIP_FLAG_BITS",
    "trust_region",
]

CLIP_FLAG_BITS = {"outside_low": 1, "outside_high": 2, "binding_low": 4, "binding_high": 8}
"""Per-token clip flags in samples are int8 bit sets of these values (one list per branch)."""

DISTRIBUTION_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("name", pa.string()),
        ("edges", pa.list_(pa.float64())),  # x edges, len nx+1
        ("y_edges", pa.list_(pa.float64())),  # null for 1-D; len ny+1 for 2-D
        ("counts", pa.list_(pa.int64())),  # nx (1-D) or nx*ny row-major (2-D, x major)
        # The branch's trust region (ratio space) on `log_ratio/<branch>/*` rows; null: no bound on that side
        # (both null: no trust region). Null on other rows. Absent in files written before they existed.
        ("low", pa.float64()),
        ("high", pa.float64()),
    ]
)
DISTRIBUTION_OPTIONAL = ("low", "high")
"""Columns added after format version 1 first shipped: readers fill them with nulls when a file lacks them."""


def trust_region(low: float | None, high: float | None) -> tuple[float | None, float | None]:
    """(low, high) with an unbounded side as None: low <= 0 (CISPO's ε_low ≥ 1) and high = inf have no edge."""
    lo = None if low is None or not low > 0 else float(low)
    hi = None if high is None or not np.isfinite(high) else float(high)
    return lo, hi

OUTLIER_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("branch", pa.string()),  # token | sequence | mixed
        ("side", pa.string()),  # low | high
        ("distance", pa.float64()),  # log-space distance outside the trust region (> 0)
        ("log_ratio", pa.float64()),  # log of this branch's ratio at the token
        ("binding", pa.bool_()),  # the clip removed this token's gradient
        ("response_id", pa.int64()),
        ("position", pa.int64()),  # token index within the response
        ("epoch", pa.int64()),  # PPO pass that saw it
        ("token_id", pa.int64()),  # null when the trainer passed no token ids
        ("token_text", pa.string()),
        ("context_left", pa.string()),  # up to N tokens before, concatenated
        ("context_right", pa.string()),  # up to N tokens after, concatenated
        ("entropy", pa.float64()),  # null without entropy
        ("w", pa.float64()),  # mixing weight; null for non-DHPO objectives
        ("advantage", pa.float64()),
    ]
)

_F32 = pa.list_(pa.float32())
SAMPLE_SCHEMA = pa.schema(
    [
        ("step", pa.int64()),
        ("response_id", pa.int64()),
        ("epoch", pa.int64()),
        ("reward", pa.float64()),  # null when add_rollout did not see this response
        ("advantage", pa.float64()),
        ("length", pa.int64()),  # valid tokens
        ("token_id", pa.list_(pa.int64())),
        ("token_text", pa.list_(pa.string())),
        ("log_prob", _F32),
        ("old_log_prob", _F32),
        ("entropy", _F32),
        ("w", _F32),
        ("token_ratio", _F32),
        ("seq_ratio", _F32),
        ("mixed_ratio", _F32),
        ("clip_token", pa.list_(pa.int8())),  # CLIP_FLAG_BITS per token
        ("clip_sequence", pa.list_(pa.int8())),
        ("clip_mixed", pa.list_(pa.int8())),
        # Added after format version 1 first shipped (older files read as nulls, SAMPLE_OPTIONAL):
        ("source", pa.string()),  # "sample" (the hash draw) | "outlier" (an outlier token's response); null: sample
        ("prompt", pa.string()),  # the prompt text, when the trainer passes it
        ("gold", pa.string()),  # the reference answer, when the trainer passes it
    ]
)
SAMPLE_OPTIONAL = ("source", "prompt", "gold")
"""Sample columns added after format version 1 first shipped: readers fill them with nulls when absent."""


@dataclass
class Histogram:
    """A fixed-bin histogram. 1-D: counts (nx,). 2-D: counts (nx, ny) over (edges, y_edges)."""

    edges: np.ndarray
    counts: np.ndarray
    y_edges: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.edges = np.asarray(self.edges, dtype=np.float64)
        self.counts = np.asarray(self.counts, dtype=np.int64)
        if self.y_edges is not None:
            self.y_edges = np.asarray(self.y_edges, dtype=np.float64)
        expect = (len(self.edges) - 1,) + (() if self.y_edges is None else (len(self.y_edges) - 1,))
        if self.counts.shape != expect:
            raise ValueError(f"histogram counts shape {self.counts.shape} does not match the edges ({expect} bins)")

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def merge(self, other: "Histogram") -> "Histogram":
        """Exact: same edges required, counts add."""
        # np.array_equal(None, None) is True and None equals no array: a 1-D and a 2-D histogram differ
        if not (np.array_equal(self.edges, other.edges) and np.array_equal(self.y_edges, other.y_edges)):
            raise ValueError("cannot merge histograms with different bin edges")
        return Histogram(self.edges, self.counts + other.counts, self.y_edges)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Histogram):
            return NotImplemented
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in ("edges", "counts", "y_edges"))


@dataclass
class StepRecord:
    """Everything one training step records. Field names are the metric names of dhpo_suite.runs.metrics.

    scalars: metric name -> float (NaN when undefined, e.g. entropy stats without entropy).
    distributions: name -> Histogram (`log_ratio/<branch>/<pos|neg|zero>`, `entropy`, `w`, `length`,
        `entropy_x_position`, `entropy_x_log_ratio`).
    outliers: rows of OUTLIER_SCHEMA (without `step`), best first per branch.
    samples: rows of SAMPLE_SCHEMA (without `step`): the hash-drawn responses.
    outlier_responses: rows of SAMPLE_SCHEMA (without `step`): the responses the outlier tokens come from
        (each (response_id, epoch) of `outliers` once), stored in the samples file with source "outlier".
    trust_regions: branch -> (low, high) in ratio space, None for an unbounded side (see `trust_region`);
        stored on the branch's log-ratio histogram rows.
    """

    step: int
    scalars: dict[str, float] = field(default_factory=dict)
    distributions: dict[str, Histogram] = field(default_factory=dict)
    outliers: list[dict[str, Any]] = field(default_factory=list)
    samples: list[dict[str, Any]] = field(default_factory=list)
    trust_regions: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    outlier_responses: list[dict[str, Any]] = field(default_factory=list)

    def attach_prompts(self, prompts: Sequence[str], golds: Sequence[str], group_size: int) -> None:
        """Fill the optional `prompt` and `gold` columns of every kept response (samples and outlier
        responses) from its group: response_id // group_size indexes `prompts` and `golds` (the trainers'
        response ids are prompt_index * group_size + j)."""
        for row in self.samples + self.outlier_responses:
            group = int(row["response_id"]) // group_size
            if 0 <= group < len(prompts):
                row["prompt"], row["gold"] = str(prompts[group]), str(golds[group])

    # ---- Arrow tables (the writer stores these; the reader rebuilds records from them) ----
    def scalars_table(self, time: float | None = None) -> pa.Table:
        cols: dict[str, list] = {"step": [int(self.step)], "time": [time]}
        for name in sorted(self.scalars):
            if name in cols:
                raise ValueError(f"scalar name {name!r} is reserved")
            cols[name] = [float(self.scalars[name])]
        schema = pa.schema([("step", pa.int64()), *((n, pa.float64()) for n in cols if n != "step")])  # time: float
        return pa.table(cols, schema=schema)

    def distributions_table(self) -> pa.Table:
        rows = []
        for name, h in sorted(self.distributions.items()):
            branch = name.split("/")[1] if name.startswith("log_ratio/") else None
            low, high = trust_region(*self.trust_regions.get(branch, (None, None)))
            rows.append({
                "step": int(self.step),
                "name": name,
                "edges": h.edges.tolist(),
                "y_edges": None if h.y_edges is None else h.y_edges.tolist(),
                "counts": h.counts.reshape(-1).tolist(),
                "low": low,
                "high": high,
            })
        table = pa.Table.from_pylist(rows, schema=DISTRIBUTION_SCHEMA)
        # No trust regions known (a hand-built record): leave the columns out, which reads as "not recorded",
        # not as "no trust region".
        return table if self.trust_regions else table.drop_columns(list(DISTRIBUTION_OPTIONAL))

    def outliers_table(self) -> pa.Table:
        return _rows_table(self.outliers, self.step, OUTLIER_SCHEMA)

    def samples_table(self) -> pa.Table:
        rows = [{**r, "source": r.get("source") or "sample"} for r in self.samples]
        rows += [{**r, "source": "outlier"} for r in self.outlier_responses]
        return _rows_table(rows, self.step, SAMPLE_SCHEMA)


def _rows_table(rows: list[Mapping[str, Any]], step: int, schema: pa.Schema) -> pa.Table:
    names = set(schema.names) - {"step"}
    out = []
    for i, r in enumerate(rows):
        extra = set(r) - names
        if extra:
            raise ValueError(f"row {i}: unknown field(s) {sorted(extra)}; schema has {sorted(names)}")
        out.append({"step": int(step), **{n: _plain(r.get(n)) for n in names}})
    return pa.Table.from_pylist(out, schema=schema)


def _plain(v: Any) -> Any:
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def histograms_from_table(table: pa.Table) -> dict[str, Histogram]:
    """Rebuild {name: Histogram} from a distributions table (one step)."""
    out = {}
    for r in table.to_pylist():
        y = r["y_edges"]
        counts = np.asarray(r["counts"], dtype=np.int64)
        if y is not None:
            shape = (len(r["edges"]) - 1, len(y) - 1)
            if counts.size != shape[0] * shape[1]:
                raise ValueError(f"histogram {r['name']!r}: {counts.size} counts for a {shape} grid")
            counts = counts.reshape(shape)
        out[r["name"]] = Histogram(np.asarray(r["edges"]), counts, None if y is None else np.asarray(y))
    return out
