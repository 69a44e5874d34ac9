"""The dashboard's loaders (dashboard/data.py) on real run and evaluation folders: recorded trust regions with
the edge fallback for older runs, one file read per step for histograms, and sharded evaluation samples."""

from __future__ import annotations

import numpy as np
import pytest
from tests.dashboard.fixture_runs import BENCHES, write_eval_dir

from dhpo_suite.dashboard import data
from dhpo_suite.runs import RunReader
from dhpo_suite.runs import eval_results as er
from dhpo_suite.testing.synthetic_runs import write_synthetic_run


@pytest.fixture(scope="module")
def cispo_run(tmp_path_factory):
    return str(write_synthetic_run(tmp_path_factory.mktemp("cispo") / "cispo", steps=3, algo="cispo"))


def test_trust_bounds_come_from_the_run_and_keep_an_open_side_open(cispo_run):
    # CISPO (guide, Appendix D): ε_low 10 (no lower bound), ε_high 0.2.
    assert data.trust_bounds(cispo_run, 2, "token", {}) == (None, pytest.approx(1.2))


def test_trust_bounds_of_older_runs_fall_back_to_the_bin_edges(runs_root):
    """Fixture runs are written from hand-built records: no low/high columns, as before they existed."""
    run = str(runs_root / "dhpo-e")
    assert RunReader(run).trust_regions(3) is None
    assert data.trust_bounds(run, 3, "token", {}) == pytest.approx((0.8, 1.28))
    assert data.trust_bounds(run, 3, "sequence", {}) == pytest.approx((1 - 3e-4, 1 + 4e-4))


def test_histograms_sum_signs_and_read_each_step_once(cispo_run, monkeypatch):
    reads = []
    real = RunReader.step_distributions
    monkeypatch.setattr(RunReader, "step_distributions",
                        lambda self, step, names=None: reads.append(step) or real(self, step, names))
    data._step_histograms.clear()
    names = [f"log_ratio/token/{s}" for s in ("pos", "neg", "zero")]
    got, problems = data.histograms(cispo_run, [1, 2, 3], names)
    assert problems == [] and sorted(reads) == [1, 2, 3]  # one read per step (on threads), not one per histogram
    r = RunReader(cispo_run)
    for s in (1, 2, 3):
        assert np.array_equal(got[s][1], sum(r.distributions(s, n).counts for n in names))
    data.histograms(cispo_run, [1, 2, 3], names[:1])  # another advantage sign: served from the cache
    assert sorted(reads) == [1, 2, 3]
    assert "no distribution named 'nope'" in data.histograms(cispo_run, [1], ["nope"])[1][0]


def test_eval_samples_include_data_parallel_shards(tmp_path):
    folder = write_eval_dir(tmp_path / "eval", 0.5)
    bench = BENCHES[0]
    main = er.samples_path(folder, bench)
    records = er.read_samples(main).records
    main.unlink()  # `dhpo-suite eval --dp`: one file per worker
    for rank in range(2):
        with er.SampleWriter(er.shard_samples_path(folder, bench, rank, 2)) as w:
            w.write_batch(records[rank::2])
    got, problems = data.eval_samples(str(folder), bench)
    assert problems == []
    assert (sorted((r["problem_id"], r["sample"]) for r in got)
            == sorted((r["problem_id"], r["sample"]) for r in records))
    assert "missing" in data.eval_samples(str(folder), "no-such-bench")[1][0]
