"""Compare mirrors, read back with the trackers' own readers, with the run directory (read with RunReader)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from dhpo_suite.runs import RunReader

from tests.tracking import wandb_records


def run_scalars(run_dir: Path) -> dict[int, dict[str, float]]:
    """{step: {metric: value}} of every measured (finite) scalar in the run directory."""
    frame = RunReader(run_dir).scalars()
    out = {}
    for row in frame.to_dict("records"):
        out[int(row["step"])] = {k: float(v) for k, v in row.items()
                                 if k not in ("step", "time") and v is not None and math.isfinite(float(v))}
    return out


def run_histograms(run_dir: Path) -> dict[int, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """{step: {name: (edges, counts)}} of every non-empty 1-D histogram, cut to its non-empty span."""
    reader = RunReader(run_dir)
    out = {}
    for step in reader.steps():
        out[step] = {}
        for name, h in reader.step_distributions(step).items():
            nz = np.flatnonzero(h.counts) if h.y_edges is None else np.array([])
            if nz.size:
                a, b = nz[0], nz[-1]
                out[step][name] = (h.edges[a:b + 2], h.counts[a:b + 1])
    return out


def tensorboard_events(logdir: Path):
    """TensorBoard's own EventAccumulator over `logdir`, everything loaded."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.TENSORS: 0})
    acc.Reload()
    return acc


def assert_tensorboard_matches(acc, run_dir: Path, *, other_tags: frozenset[str] = frozenset()) -> None:
    """Every scalar (float32, TensorBoard's type) and 1-D histogram of every step, and nothing else (but
    `other_tags`, e.g. verl's own metrics)."""
    expected = run_scalars(run_dir)
    tags = set(acc.Tags()["scalars"])
    assert tags - other_tags == set().union(*(set(s) for s in expected.values()))
    for tag in tags - other_tags:
        got = {e.step: e.value for e in acc.Scalars(tag)}
        want = {step: s[tag] for step, s in expected.items() if tag in s}
        assert set(got) == set(want), tag
        for step, v in want.items():
            assert got[step] == np.float32(v), (tag, step, got[step], v)
    hists = run_histograms(run_dir)
    names = set().union(*(set(h) for h in hists.values()))
    assert set(acc.Tags()["histograms"]) == names
    for name in names:
        events = {e.step: e.histogram_value for e in acc.Histograms(name)}
        for step, per in hists.items():
            if name not in per:
                assert step not in events
                continue
            edges, counts = per[name]
            h = events[step]
            assert list(h.bucket) == counts.tolist(), (name, step)
            assert [h.min, *h.bucket_limit] == edges.tolist(), (name, step)
            assert h.num == counts.sum()


def tensorboard_manifest(acc, tag: str = "manifest") -> dict:
    text = acc.Tensors(tag)[0].tensor_proto.string_val[0].decode()
    assert text.startswith("```json\n") and text.endswith("\n```")
    return json.loads(text[len("```json\n"):-len("\n```")])


def assert_wandb_matches(history: dict[int, dict], run_dir: Path, *, other_keys: frozenset[str] = frozenset()):
    """Every scalar (exact: W&B keeps float64) and 1-D histogram of every step in the W&B history."""
    expected = run_scalars(run_dir)
    hists = run_histograms(run_dir)
    assert set(expected) <= set(history)
    for step, scalars in expected.items():
        row = history[step]
        got = {k: v for k, v in row.items() if not k.startswith("_") and not isinstance(v, dict)}
        assert set(got) - other_keys == set(scalars), step
        for k, v in scalars.items():
            assert got[k] == v, (step, k)
        media = {k: v for k, v in row.items() if isinstance(v, dict) and v.get("_type") == "histogram"}
        assert set(media) == set(hists[step]), step
        for name, (edges, counts) in hists[step].items():
            assert media[name]["values"] == counts.tolist(), (step, name)
            np.testing.assert_allclose(media[name]["bins"], edges, rtol=0, atol=0)


def wandb_table(offline_run: Path, cell: dict) -> dict:
    """A logged wandb.Table (its JSON file in the offline run's files/)."""
    assert cell["_type"] == "table-file"
    return json.loads((offline_run / "files" / cell["path"]).read_text())


__all__ = ["assert_tensorboard_matches", "assert_wandb_matches", "run_histograms", "run_scalars",
           "tensorboard_events", "tensorboard_manifest", "wandb_records", "wandb_table"]
