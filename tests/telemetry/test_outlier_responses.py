"""Every outlier token's response is recorded in full (source "outlier" in the samples file): exactly under
rank merging, in the torch path and its numpy reference alike, and older samples files still read."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from dhpo_suite.runs import Manifest, RunReader, RunWriter
from dhpo_suite.train.telemetry import TelemetryState
from dhpo_suite.runs.format import step_file
from tests.telemetry.oracle import add_update_numpy, numpy_branches
from dhpo_suite.train.telemetry.state import outlier_order
from tests.telemetry.test_telemetry_merge import B, DECODE, SPEC, accumulate, batch, rollout


def _pairs(rec):
    return {(o["response_id"], o["epoch"]) for o in rec.outliers}


def test_each_outlier_opens_its_response_and_the_merge_is_exact(tmp_path):
    out, d = batch(7, "dhpo-e")
    whole = accumulate(out, d, [torch.arange(B)])
    rollout(whole, d, torch.arange(B))
    r0, r1 = torch.arange(0, B, 2), torch.arange(1, B, 2)
    rank0, rank1 = accumulate(out, d, [r0[:3], r0[3:]]), accumulate(out, d, [r1])
    assert SPEC.outlier_responses >= len({(o["response_id"], o["epoch"]) for o in whole.to_record(3).outliers})
    rollout(rank0, d, torch.arange(0, B // 2))
    rollout(rank1, d, torch.arange(B // 2, B))
    merged = rank0.merge(TelemetryState.from_bytes(rank1.state().to_bytes())).to_record(3)
    ref = whole.to_record(3)
    assert merged.outlier_responses == ref.outlier_responses and merged.samples == ref.samples
    drawn = {(s["response_id"], s["epoch"]) for s in ref.samples}
    opened = {(s["response_id"], s["epoch"]) for s in ref.outlier_responses}
    assert _pairs(ref) == opened | (drawn & _pairs(ref)) and not opened & drawn  # each once, none missing
    assert len(opened) > 0

    with RunWriter(tmp_path / "run", Manifest(algorithm="dhpo-e"), fsync=False) as w:
        w.write_step(ref)
    r = RunReader(tmp_path / "run")
    every = r.responses(3)
    assert list(every["source"]).count("outlier") == len(opened)
    assert len(r.samples(3)) == len(ref.samples)  # the hash draw alone, as before
    by_pair = {(row.response_id, row.epoch): row for row in every.itertuples()}
    for o in r.outliers(3).itertuples():  # the outlier's token is the response's token at its position
        resp = by_pair[(o.response_id, o.epoch)]
        assert resp.token_text[o.position] == o.token_text
    assert r.record(3).outlier_responses == ref.outlier_responses


def test_numpy_reference_records_the_same_responses():
    out, d = batch(8, "grpo")
    acc = accumulate(out, d, [torch.arange(B)])
    st = TelemetryState(SPEC)
    np_branches = numpy_branches(out)
    add_update_numpy(st, mask=out.response_mask.numpy(), advantages=out.advantages.numpy(),
                     log_ratio=out.log_ratio.numpy(), branches=np_branches, response_ids=d["rids"].numpy(),
                     loss_mat=out.loss_mat.numpy(), entropy=out.entropy.numpy(), w=None,
                     token_ids=d["ids"].numpy(), old_log_prob=d["old"].numpy())
    a, b = acc.to_record(1), st.to_record(1, decode=DECODE)
    assert [(s["response_id"], s["epoch"]) for s in a.outlier_responses] == \
           [(s["response_id"], s["epoch"]) for s in b.outlier_responses]
    assert a.outlier_responses


def test_a_samples_file_written_before_the_new_columns_reads_as_samples(tmp_path):
    out, d = batch(9, "grpo")
    acc = accumulate(out, d, [torch.arange(B)])
    rec = acc.to_record(2)
    with RunWriter(tmp_path / "run", Manifest(algorithm="grpo"), fsync=False) as w:
        w.write_step(rec)
    path = step_file(tmp_path / "run", "samples", 2)
    old = pq.read_table(path)
    old = old.filter(pa.compute.equal(old["source"], "sample")).drop_columns(["source", "prompt", "gold"])
    pq.write_table(old, path)
    r = RunReader(tmp_path / "run")
    assert set(r.responses(2)["source"]) == {"sample"} and len(r.samples(2)) == len(rec.samples)
    assert r.record(2).samples == rec.samples and r.record(2).outlier_responses == []


def test_a_cap_keeps_the_farthest_outliers_responses_exactly_under_merge():
    spec = dataclasses.replace(SPEC, outlier_responses=2)
    out, d = batch(7, "dhpo-e")
    whole = accumulate(out, d, [torch.arange(B)], spec)
    r0, r1 = torch.arange(0, B, 2), torch.arange(1, B, 2)
    rank0, rank1 = accumulate(out, d, [r0[:2], r0[2:5], r0[5:]], spec), accumulate(out, d, [r1[:4], r1[4:]], spec)
    merged = rank1.merge(TelemetryState.from_bytes(rank0.state().to_bytes())).to_record(3)
    ref = whole.to_record(3)
    assert merged.outlier_responses == ref.outlier_responses and merged.samples == ref.samples
    # The first two distinct (response, pass) in outlier order (largest distance first, across branches).
    first = list(dict.fromkeys((o["response_id"], o["epoch"]) for o in sorted(ref.outliers, key=outlier_order)))[:2]
    drawn = {(s["response_id"], s["epoch"]) for s in ref.samples}
    assert [(s["response_id"], s["epoch"]) for s in ref.outlier_responses] == sorted(p for p in first if p not in drawn)
