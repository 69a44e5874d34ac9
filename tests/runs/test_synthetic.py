"""Synthetic runs are shaped exactly like real ones; dhpo_suite.runs never imports torch."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import torch

from dhpo_suite.runs import RunReader, TelemetrySpec
from dhpo_suite.runs.records import SAMPLE_OPTIONAL
from dhpo_suite.testing.synthetic_runs import ALGO_BOUNDS, synthetic_record, write_synthetic_run
from dhpo_suite.train.objectives import get_objective
from dhpo_suite.train.telemetry import TelemetryAccumulator

OBJECTIVE = {"dhpo-e": {}, "dhpo-a": {}, "grpo": {"eps_high": 0.2}, "gspo": {}, "gmpo": {}, "cispo": {}, "sapo": {}}


def real_record(algo: str, max_len: int = 128):
    B, T = 8, max_len
    g = torch.Generator().manual_seed(0)
    old = -torch.rand(B, T, generator=g)
    mask = torch.arange(T)[None] < torch.randint(4, T, (B, 1), generator=g)
    adv = torch.randn(B, 1, generator=g).expand(B, T)
    out = get_objective(algo, **OBJECTIVE[algo])(old + 0.3 * torch.randn(B, T, generator=g), old, adv, mask,
                                                entropy=torch.rand(B, T, generator=g))
    acc = TelemetryAccumulator(TelemetrySpec(max_response_length=max_len, top_k=16), decode=lambda i: ["x"] * len(i))
    acc.add_rollout(torch.rand(B, generator=g), mask.sum(1), mask.sum(1) == T, 4)
    acc.add_update(out, response_ids=torch.arange(B), token_ids=torch.zeros(B, T, dtype=torch.long), old_log_prob=old)
    return acc.to_record(1, grad_norm=1.0, lr=1e-6)


def test_synthetic_records_have_the_real_shape():
    assert set(OBJECTIVE) == set(ALGO_BOUNDS)
    for algo in ALGO_BOUNDS:
        real, fake = real_record(algo), synthetic_record(3, algo, 0, collapse_at=1)
        assert set(fake.scalars) == set(real.scalars), algo
        assert fake.distributions.keys() == real.distributions.keys(), algo
        for name, h in real.distributions.items():  # same bins, including the clip-bound edges
            np.testing.assert_allclose(fake.distributions[name].edges, h.edges, rtol=1e-12, err_msg=f"{algo} {name}")
        assert fake.outliers_table().schema == real.outliers_table().schema
        assert {o["branch"] for o in fake.outliers} <= {o["branch"] for o in real.outliers} | {"sequence", "mixed"}
        if real.samples:  # optional columns (prompt, gold) are set by whoever has them: synthetic runs do
            assert {k for k, v in fake.samples[0].items() if v is not None} - set(SAMPLE_OPTIONAL) == \
                   {k for k, v in real.samples[0].items() if v is not None} - set(SAMPLE_OPTIONAL), algo


def test_write_synthetic_run_with_collapse(tmp_path):
    path = write_synthetic_run(tmp_path / "r", steps=40, algo="dhpo-e", collapse_at=10, prompts=4, max_len=64)
    r = RunReader(path)
    df = r.scalars()
    assert list(df["step"]) == list(range(1, 41)) and r.manifest.status == "completed"
    assert df["entropy/p50"].iloc[-1] < 0.1 * df["entropy/p50"].iloc[0]
    assert df["entropy/frac_below_0.01"].iloc[-1] > 0.2 > df["entropy/frac_below_0.01"].iloc[0]
    assert df["clip/token/binding"].iloc[-5:].mean() > df["clip/token/binding"].iloc[:5].mean()
    assert list(r.checkpoints()) == [40] and r.problems == []


def test_runs_package_does_not_import_torch():
    """Reading and writing runs never needs torch; only writing a synthetic record does (it calls the
    objective library, so no formula is repeated outside it)."""
    code = ("import sys, dhpo_suite.runs, dhpo_suite.testing.synthetic_runs;"
            "assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_synthetic_steps_are_the_library_objective():
    """What a synthetic step records is the library's own output on its simulated tokens, e.g. DHPO-E's
    w = 0.5 on a constant-entropy response (the numpy copy this replaced gave 0)."""
    from dhpo_suite.testing import synthetic_runs as synthetic

    rng = np.random.default_rng(0)
    n, T = 2, 6
    old, lr = -rng.random((n, T)).astype(np.float32), rng.normal(0, 0.3, (n, T)).astype(np.float32)
    A, mask = np.ones((n, T), np.float32), np.ones((n, T), bool)
    entropy = np.stack([np.full(T, 0.7), rng.random(T)]).astype(np.float32)
    got = synthetic._score("dhpo-e", old, lr, A, mask, entropy)
    out = get_objective("dhpo-e")(torch.from_numpy(old + lr), torch.from_numpy(old), torch.from_numpy(A),
                                  torch.from_numpy(mask), entropy=torch.from_numpy(entropy))
    assert (got.mix_weight[0] == 0.5).all()
    torch.testing.assert_close(got.loss_mat, out.loss_mat, rtol=0, atol=0)
    torch.testing.assert_close(got.branches["mixed"].clip_high, out.branches["mixed"].clip_high, rtol=0, atol=0)
