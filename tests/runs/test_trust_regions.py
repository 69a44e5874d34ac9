"""Each branch's trust region is recorded in the run (distributions `low`/`high`), one-sided ones included, and
older runs without those columns still read. Also the one-read `step_distributions(step, names)`."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest
import torch

from dhpo_suite.runs import Manifest, RunReader, RunWriter, StepRecord, TelemetrySpec
from dhpo_suite.runs.format import step_file
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import TelemetryAccumulator


def objective_record(algo: str, step: int = 1, **hparams) -> StepRecord:
    """One step of the real objective `algo` on random inputs, through the telemetry accumulator."""
    g = torch.Generator().manual_seed(step)
    B, T = 4, 12
    old = -torch.rand(B, T, generator=g) - 0.1
    new = old + torch.randn(B, T, generator=g) * 0.4
    adv = torch.randn(B, 1, generator=g).expand(B, T)
    mask = torch.ones(B, T, dtype=torch.bool)
    out = get_objective(algo, **hparams)(new, old, adv, mask, entropy=torch.rand(B, T, generator=g))
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=T, top_k=4, n_samples=2))
    acc.add_update(out, response_ids=torch.arange(B))
    return acc.to_record(step)


def write(run, *records) -> RunReader:
    with RunWriter(run, Manifest(algorithm="test")) as w:
        for rec in records:
            w.write_step(rec)
    return RunReader(run)


def test_cispo_region_is_one_sided_and_gspo_token_branch_has_none(tmp_path):
    cispo = write(tmp_path / "cispo", objective_record("cispo", eps_low=1.0, eps_high=0.28))
    # ε_low = 1 gives 1 − ε_low = 0: no lower bound, recorded as None (not mirrored, not 0).
    assert cispo.trust_regions(1)["token"] == (None, pytest.approx(1.28))
    gspo = write(tmp_path / "gspo", objective_record("gspo", eps_low=3e-4, eps_high=4e-4))
    regions = gspo.trust_regions(1)
    assert regions["token"] == (None, None)  # GSPO clips the sequence ratio only
    assert regions["sequence"] == (pytest.approx(1 - 3e-4), pytest.approx(1 + 4e-4))
    # Plain pandas sees them on the branch's log-ratio rows; other rows are null.
    df = pq.read_table(step_file(tmp_path / "gspo", "distributions", 1)).to_pandas().set_index("name")
    assert df.loc["log_ratio/sequence/neg", "high"] == pytest.approx(1 + 4e-4)
    assert df["low"].isna()["entropy"]


def test_record_round_trip_keeps_trust_regions(tmp_path):
    rec = objective_record("dhpo-e", eps_low=0.2, eps_high=0.28)
    assert set(rec.trust_regions) == {"token", "sequence", "mixed"}
    back = write(tmp_path / "run", rec).record(1)
    assert back.trust_regions == rec.trust_regions
    assert back.distributions == rec.distributions


def test_runs_without_recorded_regions_still_read(tmp_path):
    """A hand-built record (no trust regions) writes no low/high columns, like runs written before them:
    the reader says "not recorded" (None), and every loader still reads the file."""
    rec = objective_record("grpo")
    legacy = StepRecord(1, rec.scalars, rec.distributions)
    r = write(tmp_path / "run", legacy)
    names = pq.read_schema(step_file(tmp_path / "run", "distributions", 1)).names
    assert "low" not in names and "high" not in names
    assert r.trust_regions(1) is None
    assert r.distributions(1, "log_ratio/token/pos") == rec.distributions["log_ratio/token/pos"]
    assert r.step_distributions(1) == rec.distributions
    assert r.record(1).trust_regions == {}


def test_step_distributions_reads_only_the_named_histograms(tmp_path):
    rec = objective_record("dhpo-e")
    r = write(tmp_path / "run", rec)
    names = ["log_ratio/mixed/pos", "log_ratio/mixed/neg", "entropy", "not-there"]
    got = r.step_distributions(1, names)
    assert set(got) == {"log_ratio/mixed/pos", "log_ratio/mixed/neg", "entropy"}
    for n, h in got.items():
        assert h == r.distributions(1, n) == rec.distributions[n]
