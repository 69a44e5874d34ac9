"""`dhpo-suite export`: the mirrors, read back with TensorBoard's and W&B's own readers, equal the run directory."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.runs import METRICS, RunReader
from tests.tracking import readback, wandb_records

# every objective testing.synthetic_runs simulates
ALGOS = ("grpo", "gspo", "gmpo", "cispo", "sapo", "dhpo-a", "dhpo-e")


def _export(*args: str) -> str:
    result = CliRunner().invoke(app, ["export", *args, "--no-progress"])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("algo", ALGOS)
def test_tensorboard_events_equal_the_run_directory(synthetic_run, tmp_path, algo):
    run = synthetic_run(steps=4, algo=algo)
    out = _export(str(run), "--to", "tensorboard")
    logdir = tmp_path / "runs" / "tensorboard" / "run"  # default: beside the run directories
    assert str(logdir) in out
    acc = readback.tensorboard_events(logdir)
    readback.assert_tensorboard_matches(acc, run)
    # Every per-branch clip fraction the run measured is there under its documented name.
    branches = {"grpo": ["token"], "dhpo-e": ["token", "sequence", "mixed"]}.get(algo, [])
    for b in branches:
        for side in ("outside_low", "outside_high", "binding_low", "binding_high", "binding"):
            assert f"clip/{b}/{side}" in acc.Tags()["scalars"]
    assert {t for t in acc.Tags()["scalars"] if "/" in t} <= set(METRICS) | {t for t in acc.Tags()["scalars"]
                                                                            if t.split("/")[0] == "time"}
    assert readback.tensorboard_manifest(acc) == RunReader(run).manifest.to_dict()


def test_histograms_hold_log_ratio_per_branch_and_entropy(synthetic_run, tmp_path):
    run = synthetic_run(steps=2, algo="dhpo-e")
    _export(str(run), "--to", "tensorboard", "--out", str(tmp_path / "tb"))
    tags = set(readback.tensorboard_events(tmp_path / "tb").Tags()["histograms"])
    for b in ("token", "sequence", "mixed"):
        assert {f"log_ratio/{b}/pos", f"log_ratio/{b}/neg"} <= tags
    assert {"entropy", "w", "length"} <= tags


def test_wandb_offline_run_holds_the_same_history(synthetic_run, tmp_path):
    run = synthetic_run(steps=12, algo="dhpo-e")
    out = _export(str(run), "--to", "wandb", "--table-every", "5", "--out", str(tmp_path / "wb"))
    offline = wandb_records.offline_run(tmp_path / "wb")
    assert f"wandb sync {offline}" in out
    history = wandb_records.history(offline)
    readback.assert_wandb_matches(history, run, other_keys=frozenset({"samples"}))
    assert wandb_records.config(offline) | {"_wandb": None} == RunReader(run).manifest.to_dict() | {"_wandb": None}
    # Sampled rollouts: a table on steps 5 and 10, one row per sampled response of that step.
    reader = RunReader(run)
    assert [s for s in sorted(history) if "samples" in history[s]] == [5, 10]
    table = readback.wandb_table(offline, history[10]["samples"])
    assert table["columns"] == ["step", "response_id", "prompt", "response", "gold", "reward", "advantage",
                                "length", "mean_ratio", "seq_ratio"]
    samples = reader.samples(10).sort_values("response_id")
    assert [r[1] for r in table["data"]] == samples["response_id"].tolist()
    for row, (_, s) in zip(table["data"], samples.iterrows()):
        assert row[2] == s["prompt"] and s["prompt"]  # synthetic runs record prompts, as the trainer does
        assert row[3] == "".join(s["token_text"]) and row[4] == (s["gold"] or "")
        assert row[5] == pytest.approx(s["reward"]) and row[7] == s["length"]
        assert row[8] == pytest.approx(float(s["mixed_ratio"].mean()), rel=1e-6)  # DHPO: the mix the loss used


def test_export_names_a_bad_target_or_run(tmp_path, synthetic_run):
    bad = CliRunner().invoke(app, ["export", str(synthetic_run(steps=1)), "--to", "mlflow"])
    assert bad.exit_code == 2 and "--to" in bad.output and "tensorboard, wandb" in bad.output
    missing = CliRunner().invoke(app, ["export", str(tmp_path / "nope"), "--to", "tensorboard"])
    assert missing.exit_code == 2 and "manifest.json" in missing.output


def test_a_broken_step_file_is_skipped_and_named(synthetic_run, tmp_path):
    run = synthetic_run(steps=3)
    broken = run / "distributions" / "step-000002.parquet"
    broken.write_bytes(b"not parquet")
    out = _export(str(run), "--to", "tensorboard", "--out", str(tmp_path / "tb"))
    assert "skipped" in out and str(broken) in out
    acc = readback.tensorboard_events(tmp_path / "tb")
    assert [e.step for e in acc.Scalars("reward/mean")] == [1, 2, 3]  # scalars of step 2 still mirrored
    assert [e.step for e in acc.Histograms("entropy")] == [1, 3]


def test_a_histogram_finer_than_wandb_allows_is_merged_not_dropped():
    """A TelemetrySpec with more bins than wandb.Histogram's 512 (e.g. weight_bins=1000) still mirrors."""
    import numpy as np
    import wandb

    from dhpo_suite.runs import Histogram, StepRecord
    from dhpo_suite.tracking.wandb_run import step_payload

    counts = 1 + np.arange(1000) % 7
    record = StepRecord(1, {"w/mean": 0.5}, {"w": Histogram(np.linspace(0, 1, 1001), counts)})
    h = step_payload(record)["w"]
    assert len(h.histogram) <= wandb.Histogram.MAX_LENGTH and sum(h.histogram) == counts.sum()
    assert h.bins[0] == 0.0 and h.bins[-1] == 1.0 and len(h.bins) == len(h.histogram) + 1
