"""The step-metric registries: every registered metric is defined, documented and recorded; a token metric is
the mean of its per-token value over the step's valid tokens; adding one is one function plus its definition
(the worked example of docs/run-format.md, run here)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from dhpo_suite.runs.metrics import BRANCHES, METRICS
from dhpo_suite.train.telemetry import TelemetryState, token_metric
from dhpo_suite.train.telemetry.metrics import RESPONSE_METRICS, TOKEN_METRICS, Tokens
from tests.telemetry.oracle import add_update_numpy, numpy_branches
from tests.telemetry.test_telemetry_merge import B, DECODE, SPEC, accumulate, batch, rollout

DOC = Path(__file__).resolve().parents[2] / "docs" / "run-format.md"
GENERIC = "/(" + "|".join(BRANCHES) + ")/"  # clip/token/binding is documented as clip/{b}/binding


def whole_batch_mean(out, name):
    """The metric's per-token values over every valid token of the batch, averaged at once."""
    valid = out.response_mask.reshape(-1).nonzero().squeeze(1)
    return TOKEN_METRICS[name](Tokens(out, valid)).mean().item()


def test_every_registered_metric_is_defined_documented_and_recorded():
    out, d = batch(11, "dhpo-e")
    acc = accumulate(out, d, [torch.arange(B)])
    rollout(acc, d, torch.arange(B))
    rec = acc.to_record(1)
    doc = DOC.read_text()
    for name in [*TOKEN_METRICS, *RESPONSE_METRICS]:
        assert name in METRICS, name
        assert f"`{re.sub(GENERIC, '/{b}/', name)}`" in doc, name
        assert np.isfinite(rec.scalars[name]), name


@pytest.mark.parametrize("name", sorted(TOKEN_METRICS))
def test_token_metric_is_its_whole_batch_mean_under_any_split(name):
    out, d = batch(12, "grpo")
    split = accumulate(out, d, [torch.arange(0, B, 3), torch.arange(1, B, 3), torch.arange(2, B, 3)])
    assert split.to_record(1).scalars[name] == pytest.approx(whole_batch_mean(out, name), rel=1e-12)


def test_response_metrics_read_the_rollout_facts():
    out, d = batch(13, "grpo")
    acc = accumulate(out, d, [torch.arange(B)])
    rollout(acc, d, torch.arange(B))
    s = acc.to_record(1).scalars
    lengths, rewards = d["lengths"].double().numpy(), d["rewards"].double().numpy()
    assert s["length/p50"] == np.median(lengths) and s["reward/std"] == pytest.approx(rewards.std())
    assert s["groups/count"] == B // 4


def test_a_new_metric_is_one_function_and_its_definition(monkeypatch):
    """docs/run-format.md's worked example: `kl/k2` = mean ½(log r)², defined in METRICS, one function here."""
    monkeypatch.setitem(METRICS, "kl/k2", "approximate KL(π_old‖π) = mean(½ (log r)²) (k2 estimator)")
    try:
        @token_metric("kl/k2")
        def kl_k2(t: Tokens) -> torch.Tensor:
            return 0.5 * t.log_ratio**2

        out, d = batch(14, "dhpo-e")
        rec = accumulate(out, d, [torch.arange(0, B, 2), torch.arange(1, B, 2)]).to_record(1)
        lr = out.log_ratio[out.response_mask].double()
        assert rec.scalars["kl/k2"] == pytest.approx((0.5 * lr**2).mean().item(), rel=1e-12)
        # The oracle checks its masking and summing from the per-token values alone.
        st = TelemetryState(SPEC)
        add_update_numpy(st, mask=out.response_mask.numpy(), advantages=out.advantages.numpy(),
                         log_ratio=out.log_ratio.numpy(), branches=numpy_branches(out), response_ids=d["rids"].numpy(),
                         loss_mat=out.loss_mat.numpy(),
                         token_metrics={"kl/k2": 0.5 * out.log_ratio.double().numpy() ** 2})
        assert st.to_record(1, decode=DECODE).scalars["kl/k2"] == pytest.approx(rec.scalars["kl/k2"], rel=1e-12)
    finally:
        TOKEN_METRICS.pop("kl/k2", None)


def test_a_metric_without_a_definition_or_twice_is_refused():
    with pytest.raises(ValueError, match="no definition.*METRICS"):
        token_metric("kl/k9")
    with pytest.raises(ValueError, match="registered twice"):
        token_metric("kl/k1")
