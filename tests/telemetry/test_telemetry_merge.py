"""Per-rank partials merge to exactly the whole-batch record; the torch and numpy reductions agree."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from dhpo_suite.runs import TelemetrySpec
from tests.telemetry.oracle import add_update_numpy, numpy_branches
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.objectives.output import ObjectiveOutput
from dhpo_suite.train.telemetry import TelemetryAccumulator, TelemetryState

B, T, G = 16, 48, 4
SPEC = TelemetrySpec(max_response_length=T, top_k=6, n_samples=3, context_tokens=3)
DECODE = lambda ids: [f"<{i}>" for i in ids]  # noqa: E731


def batch(seed=0, algo="dhpo-e"):
    g = torch.Generator().manual_seed(seed)
    old = -torch.rand(B, T, generator=g) * 3
    lp = old + torch.randn(B, T, generator=g) * 0.25
    lengths = torch.randint(4, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None] < lengths[:, None]
    rewards = (torch.rand(B, generator=g) > 0.5).float()
    rewards[:G] = 1.0  # one all-correct group
    grouped = rewards.view(-1, G)
    adv = ((grouped - grouped.mean(1, keepdim=True)) / (grouped.std(1, keepdim=True) + 1e-6)).view(B, 1)
    ent = torch.rand(B, T, generator=g) ** 3 * 2
    ids = torch.randint(0, 100, (B, T), generator=g)
    out = get_objective(algo)(lp, old, adv.expand(B, T), mask, entropy=ent)
    return out, dict(old=old, ids=ids, rewards=rewards, lengths=lengths, rids=torch.randperm(B, generator=g) * 3 + 11)


def rows(out: ObjectiveOutput, idx) -> ObjectiveOutput:
    """The ObjectiveOutput of a subset of rows (what another rank / micro-batch would have computed)."""
    def sub(t):
        return None if t is None else t[idx]

    branches = {k: type(b)(b.ratio[idx], b.low, b.high, sub(b.clip_low), sub(b.clip_high))
                for k, b in out.branches.items()}
    return ObjectiveOutput(out.loss, out.loss_mat[idx], out.response_mask[idx], out.advantages[idx],
                           out.log_ratio[idx], branches, sub(out.mix_weight), sub(out.entropy), out.nonfinite * 0)


def accumulate(out, d, parts, spec=SPEC):
    acc = TelemetryAccumulator(spec, decode=DECODE)
    for idx in parts:
        acc.add_update(rows(out, idx), response_ids=d["rids"][idx], token_ids=d["ids"][idx],
                       old_log_prob=d["old"][idx])
    return acc


def rollout(acc, d, idx):
    acc.add_rollout(d["rewards"][idx], d["lengths"][idx], d["lengths"][idx] == T, G, response_ids=d["rids"][idx],
                    group_ids=idx // G)


def assert_same_record(a, b):
    assert a.scalars.keys() == b.scalars.keys()
    for k in a.scalars:
        assert a.scalars[k] == pytest.approx(b.scalars[k], rel=1e-12, abs=1e-15, nan_ok=True), k
    assert a.distributions == b.distributions
    assert a.outliers == b.outliers
    assert a.samples == b.samples


@pytest.mark.parametrize("algo", ["dhpo-e", "grpo", "gspo"])
def test_rank_merge_equals_whole_batch(algo):
    out, d = batch(1, algo)
    everything = torch.arange(B)
    whole = accumulate(out, d, [everything])
    rollout(whole, d, everything)
    # Two ranks with interleaved rows, each seeing two micro-batches; rank 1's state travels as bytes.
    r0, r1 = torch.arange(0, B, 2), torch.arange(1, B, 2)
    rank0 = accumulate(out, d, [r0[:3], r0[3:]])
    rank1 = accumulate(out, d, [r1[:5], r1[5:]])
    rollout(rank0, d, torch.arange(0, B // 2))  # rollout facts may be split differently from updates
    rollout(rank1, d, torch.arange(B // 2, B))
    wire = TelemetryState.from_bytes(rank1.state().to_bytes())
    merged = rank0.merge(wire).to_record(5, grad_norm=1.5, lr=1e-6)
    ref = whole.to_record(5, grad_norm=1.5, lr=1e-6)
    assert_same_record(merged, ref)
    assert ref.outliers and len(ref.samples) == 3
    assert ref.scalars["groups/all_correct_frac"] == pytest.approx(
        np.mean((d["rewards"].view(-1, G) > 0.5).all(1).numpy()))
    # Order of merging does not matter either.
    other = accumulate(out, d, [r1])
    rollout(other, d, torch.arange(B // 2, B))
    first = accumulate(out, d, [r0])
    rollout(first, d, torch.arange(0, B // 2))
    assert_same_record(other.merge(first).to_record(5, grad_norm=1.5, lr=1e-6), ref)


def test_torch_and_numpy_reductions_agree():
    out, d = batch(2, "dhpo-e")
    acc = accumulate(out, d, [torch.arange(B)])
    st = TelemetryState(SPEC)
    np_branches = numpy_branches(out)
    add_update_numpy(st, mask=out.response_mask.numpy(), advantages=out.advantages.numpy(),
                     log_ratio=out.log_ratio.numpy(), branches=np_branches, response_ids=d["rids"].numpy(),
                     loss_mat=out.loss_mat.numpy(), entropy=out.entropy.numpy(), w=out.mix_weight.numpy(),
                     token_ids=d["ids"].numpy(), old_log_prob=d["old"].numpy())
    a, b = acc.to_record(1), st.to_record(1, decode=DECODE)
    assert a.distributions == b.distributions
    assert a.scalars == pytest.approx(b.scalars, rel=1e-9)
    assert [(o["branch"], o["response_id"], o["position"]) for o in a.outliers] == \
           [(o["branch"], o["response_id"], o["position"]) for o in b.outliers]
    for x, y in zip(a.outliers, b.outliers):
        assert x["distance"] == pytest.approx(y["distance"], rel=1e-5)
        assert x["context_left"] == y["context_left"] and x["token_text"] == y["token_text"]
    assert [s["response_id"] for s in a.samples] == [s["response_id"] for s in b.samples]


def test_percentiles_and_fractions_match_the_raw_data():
    out, d = batch(3, "dhpo-e")
    acc = accumulate(out, d, [torch.arange(B)])
    rollout(acc, d, torch.arange(B))
    s = acc.to_record(1).scalars
    m = out.response_mask
    ent = out.entropy[m].double().numpy()
    for q in (10, 50, 90, 99):  # 50 bins per decade: within one bin (factor 10**(1/50))
        assert s[f"entropy/p{q}"] == pytest.approx(np.percentile(ent, q), rel=10 ** (1 / 50) - 1 + 1e-3)
    assert s["entropy/frac_below_0.01"] == pytest.approx((ent < 0.01).mean())
    assert s["entropy/mean"] == pytest.approx(ent.mean())
    w = out.mix_weight[m].double().numpy()
    assert s["w/p50"] == pytest.approx(np.percentile(w, 50), abs=0.002)
    lr = out.log_ratio[m].double().numpy()
    assert s["kl/k1"] == pytest.approx((-lr).mean()) and s["kl/k3"] == pytest.approx((np.expm1(lr) - lr).mean())
    lengths = d["lengths"].numpy()
    assert s["length/p90"] == np.percentile(lengths, 90) and s["length/max"] == lengths.max()
    assert s["tokens/count"] == m.sum()
    assert s["adv/std"] == pytest.approx(out.advantages[m].double().std(unbiased=False).item())
    assert not any(math.isnan(v) for v in s.values())


def test_epoch_policy():
    out, d = batch(4, "grpo")
    everything = torch.arange(B)
    for policy, expect in (("all", 2), ("first", 1)):
        acc = TelemetryAccumulator(TelemetrySpec(max_response_length=T, epochs=policy))
        for epoch in (0, 1):
            acc.add_update(out, response_ids=d["rids"], epoch=epoch)
        rec = acc.to_record(0)
        assert rec.scalars["tokens/count"] == expect * out.response_mask.sum()
        assert {s["epoch"] for s in rec.samples} == {expect - 1}  # samples keep the latest pass
    _ = everything


def test_bad_inputs_name_the_argument():
    out, d = batch(5, "grpo")
    acc = TelemetryAccumulator(SPEC)
    with pytest.raises(ValueError, match="response_ids"):
        acc.add_update(out, response_ids=torch.arange(B - 1))
    with pytest.raises(ValueError, match="response_ids repeat"):
        acc.add_update(out, response_ids=torch.zeros(B, dtype=torch.long))
    with pytest.raises(ValueError, match="lengths"):
        acc.add_rollout(torch.zeros(4), torch.zeros(3), torch.zeros(4), 2)
    with pytest.raises(ValueError, match="specs"):
        TelemetryState(SPEC).merge(TelemetryState(TelemetrySpec(top_k=1)))


def test_reduce_across_ranks_with_torch_distributed(tmp_path):
    """The gather-and-merge helper over a real (single-rank, gloo) process group."""
    import torch.distributed as dist

    from dhpo_suite.train.telemetry import reduce_across_ranks

    out, d = batch(6, "dhpo-e")
    acc = accumulate(out, d, [torch.arange(B)])
    # Tests must not leave a default group behind (tests/eval closes its in-process vLLM engine for that).
    assert not dist.is_initialized(), "an earlier test left a torch.distributed process group initialised"
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        merged = reduce_across_ranks(acc)
    finally:
        dist.destroy_process_group()
    assert_same_record(merged.to_record(1, decode=DECODE), acc.to_record(1))


_SUBGROUP_WORKER = """
import sys, torch, torch.distributed as dist
from dhpo_suite.runs import TelemetrySpec
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import TelemetryAccumulator, reduce_across_ranks

rank, init, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
dist.init_process_group("gloo", init_method=init, rank=rank, world_size=3)
group = dist.new_group([1, 2])  # collective: every rank creates it
if rank > 0:
    g = torch.Generator().manual_seed(rank)
    old = -torch.rand(4, 8, generator=g)
    out_ = get_objective("dhpo-e")(old + torch.randn(4, 8, generator=g) * 0.3, old, torch.randn(4, 8, generator=g),
                                   torch.ones(4, 8, dtype=torch.bool), entropy=torch.rand(4, 8, generator=g))
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=8, top_k=3, n_samples=2))
    acc.add_update(out_, response_ids=torch.arange(4) + 4 * rank)
    open(f"{out}/own{rank}", "wb").write(acc.state().to_bytes())
    merged = reduce_across_ranks(acc, group, dst=1)  # group rank 1 = global rank 2
    open(f"{out}/merged{rank}", "wb").write(b"" if merged is None else merged.to_bytes())
dist.barrier()
dist.destroy_process_group()
"""


def test_reduce_across_ranks_on_a_subgroup_gathers_on_the_group_rank(tmp_path):
    """`dst` is a rank within the group: with subgroup [1, 2] of 3 gloo processes and dst=1 the merge lands on
    global rank 2 (a global `dst` would point outside the group) and equals the merge of both partials."""
    import subprocess
    import sys

    script = tmp_path / "worker.py"
    script.write_text(_SUBGROUP_WORKER)
    procs = [subprocess.Popen([sys.executable, str(script), str(r), f"file://{tmp_path / 'pg'}", str(tmp_path)])
             for r in range(3)]
    try:
        assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    finally:
        for p in procs:
            p.kill()
    assert (tmp_path / "merged1").read_bytes() == b""
    got = TelemetryState.from_bytes((tmp_path / "merged2").read_bytes())
    want = TelemetryState.from_bytes((tmp_path / "own1").read_bytes())
    want.merge(TelemetryState.from_bytes((tmp_path / "own2").read_bytes()))
    assert_same_record(got.to_record(1), want.to_record(1))
