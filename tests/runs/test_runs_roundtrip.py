"""Writer -> reader round trip of every record type, manifest status, checkpoints."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from dhpo_suite.runs import Manifest, RunReader, RunWriter, TelemetrySpec, list_runs
from dhpo_suite.runs.format import complete_checkpoints
from dhpo_suite.train.telemetry import TelemetryAccumulator
from tests.telemetry.helpers import random_output

DECODE = lambda ids: [f"<{i}>" for i in ids]  # noqa: E731


def real_record(step: int, seed: int = 0):
    out, lengths = random_output(seed=seed)
    B, T = out.response_mask.shape
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=T, top_k=5, n_samples=3), decode=DECODE)
    g = torch.Generator().manual_seed(seed)
    acc.add_rollout(torch.rand(B, generator=g), lengths, lengths == T, group_size=4)
    acc.add_update(out, response_ids=torch.arange(B), token_ids=torch.randint(0, 50, (B, T), generator=g),
                   old_log_prob=-torch.rand(B, T, generator=g))
    return acc.to_record(step, grad_norm=0.5, lr=1e-6)


def test_every_record_type_round_trips(tmp_path):
    rec = real_record(7)
    assert rec.outliers and rec.samples and rec.distributions
    with RunWriter(tmp_path / "run", Manifest(algorithm="dhpo-e", hparams={"eps_low": 0.2}, seed=3)) as w:
        w.write_step(rec)
    r = RunReader(tmp_path / "run")
    back = r.record(7)
    assert back.scalars == pytest.approx(rec.scalars, nan_ok=True)
    assert back.distributions == rec.distributions
    assert back.outliers == rec.outliers
    assert _close(back.samples, rec.samples)
    assert r.steps() == [7]
    assert r.problems == []
    assert r.manifest.status == "completed" and r.manifest.hparams == {"eps_low": 0.2}
    assert r.manifest.package_versions["pyarrow"]
    # Plain pandas reads the tables.
    df = pd.read_parquet(tmp_path / "run" / "scalars")
    assert list(df["step"]) == [7]
    assert set(r.distribution_names(7)) == set(rec.distributions)
    # The outliers as Arrow, of chosen columns only (the dashboard stacks 40 steps' of them, then converts once).
    cols = ["branch", "log_ratio", "token_text"]
    assert r.outlier_table(7, cols).column_names == cols
    assert r.outlier_table(7, cols).to_pandas().equals(r.outliers(7)[cols])


def _close(a, b):
    """Sample rows equal, float32 lists compared as float32."""
    for ra, rb in zip(a, b, strict=True):
        for k in ra:
            if isinstance(ra[k], list) and ra[k] and isinstance(ra[k][0], float):
                np.testing.assert_array_equal(np.float32(ra[k]), np.float32(rb[k]))
            else:
                assert ra[k] == rb[k], k
    return True


def test_status_failed_on_exception_and_resume(tmp_path):
    with pytest.raises(RuntimeError):
        with RunWriter(tmp_path / "run", Manifest(algorithm="grpo")) as w:
            w.write_step(real_record(1))
            raise RuntimeError("boom")
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert m["status"] == "failed" and "boom" in m["error"]
    with pytest.raises(FileExistsError, match="manifest.json"):
        RunWriter(tmp_path / "run", Manifest(algorithm="grpo"))
    with RunWriter(tmp_path / "run", Manifest(algorithm="grpo"), resume=True) as w:
        w.write_step(real_record(2))
    r = RunReader(tmp_path / "run")
    assert r.steps() == [1, 2] and r.manifest.status == "completed"


def test_compaction_keeps_every_step(tmp_path):
    rec = real_record(0)
    with RunWriter(tmp_path / "run", Manifest(algorithm="grpo"), compact_every=4, fsync=False) as w:
        for s in range(10):
            rec.step = s
            rec.scalars["reward/mean"] = float(s)
            w.write_step(rec)
        assert len(list((tmp_path / "run" / "scalars").glob("step-*.parquet"))) == 2
    r = RunReader(tmp_path / "run")
    df = r.scalars()
    assert list(df["step"]) == list(range(10)) and list(df["reward/mean"]) == [float(s) for s in range(10)]
    assert not list((tmp_path / "run" / "scalars").glob("step-*.parquet"))  # close compacts


def test_checkpoints_need_the_marker(tmp_path):
    with RunWriter(tmp_path / "run", Manifest(algorithm="grpo")) as w:
        d = w.checkpoint_dir(10)
        (d / "config.json").write_text("{}")
        w.checkpoint_complete(10)
        w.checkpoint_dir(20)  # crashed mid-save: no marker
    assert d.name == "step-000010"
    assert list(RunReader(tmp_path / "run").checkpoints()) == [10]
    # The same answer without opening the run (the evaluator's --run), and {} for a folder without checkpoints.
    assert complete_checkpoints(tmp_path / "run") == {10: d}
    assert complete_checkpoints(tmp_path / "nothing") == {}


def test_list_runs_reports_broken_manifests(tmp_path):
    for name in ("a", "b"):
        RunWriter(tmp_path / "group" / name, Manifest(algorithm="grpo")).close()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "manifest.json").write_text('{"algorithm": "grpo",')
    runs = list_runs(tmp_path)
    assert [r.name for r in runs] == ["bad", "a", "b"]
    assert runs[0].manifest is None and "manifest.json" in runs[0].problem and "line 1" in runs[0].problem
    assert runs[1].status == "completed"


def test_list_runs_follows_links_to_runs_kept_elsewhere(tmp_path):
    """A folder of symlinks to runs (a comparison assembled by hand) lists them; a link back up ends at
    max_depth instead of looping."""
    for name in ("a", "b"):
        RunWriter(tmp_path / "kept" / name, Manifest(algorithm="grpo")).close()
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    for name in ("a", "b"):
        (chosen / name).symlink_to(tmp_path / "kept" / name)
    (chosen / "loop").symlink_to(chosen)
    runs = list_runs(chosen)
    assert sorted({r.path.name for r in runs}) == ["a", "b"] and all(r.status == "completed" for r in runs)


def test_exit_without_close_records_failed(tmp_path):
    import subprocess
    import sys

    code = ("import sys; from dhpo_suite.runs import RunWriter, Manifest;"
            f"w = RunWriter({str(tmp_path / 'run')!r}, Manifest(algorithm='grpo')); sys.exit(3)")
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 3
    m = RunReader(tmp_path / "run").manifest
    assert m.status == "failed" and "without closing" in m.error and m.ended_at


def test_the_manifest_names_the_cpu_and_the_kernels_torch_dispatches(tmp_path, monkeypatch):
    """Issue 46: one seed on two CPUs gives other floats; the manifest must say which CPU (and torch's kernel level,
    checked against torch itself)."""
    import torch

    from dhpo_suite.runs.manifest import cpu_description, package_versions

    monkeypatch.delenv("ATEN_CPU_CAPABILITY", raising=False)
    assert package_versions()["cpu"] == cpu_description()
    level = cpu_description().rsplit("; ", 1)[1]
    assert level == torch.backends.cpu.get_cpu_capability().lower()  # x86: avx512, avx2 or default
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Old Xeon\nflags\t\t: fpu sse2 avx avx2 fma\n\n"
                    "processor\t: 1\nmodel name\t: Old Xeon\nflags\t\t: fpu sse2 avx avx2 avx512f avx512bw avx512vl\n")
    assert cpu_description(info) == "Old Xeon; avx2"  # the first processor's flags, not the second's
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    assert cpu_description(info) == "Old Xeon; default"
