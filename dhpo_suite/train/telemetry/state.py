"""TelemetryState: the mergeable, serialisable partial of one step's telemetry (numpy, no torch).

The torch accumulator (`accumulate.py`) reduces each micro-batch on the device into this
shape; per-rank states merge exactly (integer counts and fixed-bin histograms add, per-response facts
concatenate, top-K lists merge under a total order), and `to_record` turns the merged state into the
StepRecord that is written. Float sums (means, KL) add in float64 and match the whole-batch value up to
rounding; counts, histograms, percentiles, outliers and samples match exactly.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

import numpy as np

from dhpo_suite.runs.records import StepRecord, trust_region
from dhpo_suite.runs.telemetry_spec import TelemetrySpec

from .bins import entropy_coarse_edges, entropy_edges, length_edges, log_ratio_edges, weight_edges
from .record import Decode, build_distributions, build_outlier_responses, build_outliers, build_samples, build_scalars

__all__ = ["TelemetryState", "Decode", "outlier_order", "sample_key", "SIGNS"]

SIGNS = ("pos", "neg", "zero")
RESPONSE_FIELDS = ("response_id", "reward", "length", "truncated", "correct", "group_id")
_JSON_FIELDS = ("bounds", "counts", "sums", "mins", "maxs", "outliers")  # serialised as they are
_MASK64 = (1 << 64) - 1


def sample_key(response_id: int, seed: int) -> int:
    """splitmix64 hash of (response_id, seed): samples are the n responses with the smallest keys."""
    z = (int(response_id) + (int(seed) + 1) * 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return z ^ (z >> 31)


def outlier_order(c: dict) -> tuple:
    """Total order of outlier candidates: largest distance first, then response id, position, epoch."""
    return (-c["distance"], c["response_id"], c["position"], c["epoch"])


@dataclass
class TelemetryState:
    """Sufficient statistics of one step (one rank or merged). Build with the torch accumulator."""

    spec: TelemetrySpec = field(default_factory=TelemetrySpec)
    bounds: dict[str, list] = field(default_factory=dict)  # branch -> [low, high] (ratio space or None)
    counts: dict[str, int] = field(default_factory=dict)
    sums: dict[str, float] = field(default_factory=dict)
    mins: dict[str, float] = field(default_factory=dict)
    maxs: dict[str, float] = field(default_factory=dict)
    hists: dict[str, np.ndarray] = field(default_factory=dict)
    responses: dict[str, np.ndarray] = field(default_factory=dict)
    outliers: dict[str, list[dict]] = field(default_factory=dict)  # branch -> top-K candidates
    samples: dict[int, dict] = field(default_factory=dict)  # response_id -> sample candidate
    outlier_samples: dict[str, dict] = field(default_factory=dict)  # "rid:epoch" -> an outlier's response

    # ---- bins ----
    def edges(self, name: str) -> tuple[np.ndarray, np.ndarray | None]:
        """(x_edges, y_edges or None) of histogram `name` under this state's spec and bounds."""
        s = self.spec
        if name.startswith("log_ratio/"):
            b = name.split("/")[1]
            low, high = self.bounds.get(b, [None, None])
            return log_ratio_edges(low, high, s.log_ratio_inside_bins, s.log_ratio_outside_bins), None
        if name == "entropy":
            return entropy_edges(s.entropy_bins_per_decade), None
        if name == "w":
            return weight_edges(s.weight_bins), None
        if name == "length":
            return length_edges(s.max_response_length, s.length_bins), None
        if name == "entropy_x_position":
            return entropy_coarse_edges(), length_edges(s.max_response_length, s.position_bins)
        if name == "entropy_x_log_ratio":
            return entropy_coarse_edges(), self.edges("log_ratio/token/pos")[0]
        raise KeyError(f"unknown histogram {name!r}")

    # ---- accumulation helpers (used by the torch accumulator and the synthetic generator) ----
    def set_bounds(self, branch: str, low: float | None, high: float | None) -> None:
        new = [None if low is None else float(low), None if high is None else float(high)]
        old = self.bounds.setdefault(branch, new)
        if old != new:
            raise ValueError(f"branch {branch!r}: trust region changed within a step ({old} -> {new})")

    def add_count(self, name: str, n: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + int(n)

    def add_sum(self, name: str, v: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + float(v)

    def add_extrema(self, name: str, lo: float, hi: float) -> None:
        self.mins[name] = min(self.mins.get(name, np.inf), float(lo))
        self.maxs[name] = max(self.maxs.get(name, -np.inf), float(hi))

    def add_hist(self, name: str, counts: np.ndarray) -> None:
        counts, old = np.asarray(counts, dtype=np.int64), self.hists.get(name)
        if old is not None and old.shape != counts.shape:
            raise ValueError(f"histogram {name!r}: shape {counts.shape} != {old.shape}")
        self.hists[name] = counts.copy() if old is None else old + counts

    def add_responses(self, **cols: np.ndarray) -> None:
        if set(cols) != set(RESPONSE_FIELDS):
            raise ValueError(f"add_responses needs exactly {RESPONSE_FIELDS}, got {sorted(cols)}")
        for k in RESPONSE_FIELDS:
            v = np.asarray(cols[k])
            self.responses[k] = np.concatenate([self.responses[k], v]) if k in self.responses else v

    def offer_outliers(self, branch: str, candidates: list[dict], prune: bool = True) -> None:
        """Keep the top_k candidates of `branch` under outlier_order (exact under merge); `prune` drops the
        responses no kept outlier comes from any more (merge prunes once, after every branch)."""
        pool = self.outliers.get(branch, []) + candidates
        pool.sort(key=outlier_order)
        self.outliers[branch] = pool[: self.spec.top_k]
        if prune:
            self._prune_outlier_samples()

    def wanted_outlier_responses(self) -> set[tuple[int, int]]:
        """The first spec.outlier_responses distinct (response_id, epoch) of the kept outliers, in outlier_order
        across branches: the responses recorded in full beside the samples. Exact under merge: a response's
        rank among a part's outliers is never worse than among all of them."""
        wanted: dict[tuple[int, int], None] = {}
        if self.spec.outlier_responses <= 0:
            return set()
        for c in sorted((c for cands in self.outliers.values() for c in cands), key=outlier_order):
            wanted[(int(c["response_id"]), int(c["epoch"]))] = None
            if len(wanted) >= self.spec.outlier_responses:
                break
        return set(wanted)

    def offer_outlier_sample(self, cand: dict) -> None:
        """Keep a response (a sample candidate) while an outlier token of it is kept. Exact under merge: an
        outlier and its response are offered by the same micro-batch, and both are pruned together."""
        rid, epoch = int(cand["response_id"]), int(cand["epoch"])
        if (rid, epoch) in self.wanted_outlier_responses():
            self.outlier_samples[f"{rid}:{epoch}"] = cand

    def _prune_outlier_samples(self) -> None:
        wanted = self.wanted_outlier_responses()
        self.outlier_samples = {k: c for k, c in self.outlier_samples.items()
                                if (int(c["response_id"]), int(c["epoch"])) in wanted}

    def offer_sample(self, cand: dict) -> bool:
        """Keep the n_samples responses with the smallest sample_key; a later epoch replaces an earlier one."""
        rid = cand["response_id"]
        old = self.samples.get(rid)
        if old is not None and old["epoch"] >= cand["epoch"]:
            return False
        self.samples[rid] = cand
        keep = sorted(self.samples, key=lambda r: self.samples[r]["key"])[: self.spec.n_samples]
        self.samples = {r: self.samples[r] for r in keep}
        return rid in self.samples

    def would_keep_sample(self, response_id: int, epoch: int) -> bool:
        """Cheap pre-check so the accumulator only copies rows that will be kept."""
        old = self.samples.get(response_id)
        if old is not None:
            return epoch > old["epoch"]
        if len(self.samples) < self.spec.n_samples:
            return True
        worst = max(c["key"] for c in self.samples.values())
        return sample_key(response_id, self.spec.sample_seed) < worst

    # ---- merge ----
    def merge(self, other: "TelemetryState") -> "TelemetryState":
        """Add `other` (another rank or micro-batch set) into self; returns self. Specs must match."""
        if self.spec != other.spec:
            raise ValueError(f"cannot merge telemetry with different specs: {self.spec} vs {other.spec}")
        for b, (lo, hi) in other.bounds.items():
            self.set_bounds(b, lo, hi)
        for k, n in other.counts.items():
            self.add_count(k, n)
        for k, total in other.sums.items():
            self.add_sum(k, total)
        for k in other.mins:
            self.add_extrema(k, other.mins[k], other.maxs[k])
        for k, hist in other.hists.items():
            self.add_hist(k, hist)
        if other.responses:
            self.add_responses(**other.responses)
        self.outlier_samples.update(other.outlier_samples)
        for b, cands in other.outliers.items():
            self.offer_outliers(b, list(cands), prune=False)
        self._prune_outlier_samples()
        for c in other.samples.values():
            self.offer_sample(c)
        return self

    # ---- serialisation (per-rank partials) ----
    def to_bytes(self) -> bytes:
        """A self-contained .npz blob (no pickle): arrays for histograms/responses, JSON for the rest."""
        header = {"spec": self.spec.to_dict(), **{k: getattr(self, k) for k in _JSON_FIELDS},
                  "samples": list(self.samples.values()), "outlier_samples": list(self.outlier_samples.values())}
        arrays = {f"h:{k}": v for k, v in self.hists.items()}
        arrays.update({f"r:{k}": v for k, v in self.responses.items()})
        arrays["__header__"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
        buf = io.BytesIO()
        np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds like allow_pickle
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "TelemetryState":
        try:
            z = np.load(io.BytesIO(data), allow_pickle=False)
            h = json.loads(z["__header__"].tobytes().decode())
        except (ValueError, KeyError, OSError) as e:
            raise ValueError(f"not a serialised TelemetryState: {e}") from None
        return cls(
            spec=TelemetrySpec.from_dict(h["spec"]),
            **{k: h[k] for k in _JSON_FIELDS},
            hists={k[2:]: z[k] for k in z.files if k.startswith("h:")},
            responses={k[2:]: z[k] for k in z.files if k.startswith("r:")},
            samples={int(c["response_id"]): c for c in h["samples"]},
            outlier_samples={f"{c['response_id']}:{c['epoch']}": c for c in h.get("outlier_samples", [])},
        )

    # ---- finalisation ----
    def to_record(
        self,
        step: int,
        *,
        grad_norm: float | None = None,
        lr: float | None = None,
        decode: Decode | None = None,
        extra: dict[str, float] | None = None,
    ) -> StepRecord:
        """The StepRecord of the merged step. `decode` turns stored token ids into text (outliers, samples)."""
        scalars = build_scalars(self)
        if grad_norm is not None:
            scalars["grad_norm"] = float(grad_norm)
        if lr is not None:
            scalars["lr"] = float(lr)
        scalars.update({k: float(v) for k, v in (extra or {}).items()})
        return StepRecord(
            step=int(step),
            scalars=scalars,
            distributions=build_distributions(self),
            outliers=build_outliers(self, decode),
            samples=build_samples(self, decode),
            trust_regions={b: trust_region(lo, hi) for b, (lo, hi) in sorted(self.bounds.items())},
            outlier_responses=build_outlier_responses(self, decode),
        )

