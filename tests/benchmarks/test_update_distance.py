"""The update-distance probe on the real trainer and tiny model (warm-started on `arithmetic`, cached).

Expected values from the paper, not from the probe: on-policy (one epoch, one mini-batch: r = s = 1 at the only
optimizer step) every arm's gradient is m·A·∇log π with m = 1 (eq. 17), so GRPO 0.2/0.2, GRPO 0.2/0.28,
DHPO-E (branch or unified) and DHPO-A make the same update: distance 0 up to float rounding. Off-policy
mini-batches (epochs x mini-batches > 1) let ratios leave 1 and the arms part. The reference arm against
itself is exactly 0 (same state, same rollout, same shuffle), while a second rollout moves it (yardstick > 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dhpo_suite.science.update_distance import ARMS, main, probe_run


@pytest.fixture(scope="module")
def warm_tiny_dir() -> Path:
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import TrainConfig
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    cfg = TrainConfig()  # the default run's warm start (the cache tests/train builds too)
    task = get_task(cfg.task)
    with GraderPool(workers=1) as pool:
        return resolve_model_dir(cfg, task, sft_accuracy_fn(cfg, task, pool), log=print)


def _grpo_run(out: Path, model: Path, epochs: int, mini_batches: int) -> Path:
    from dhpo_suite.train.embedded import TrainConfig, train

    cfg = TrainConfig(algo="grpo", model=str(model), steps=2, checkpoint_every=1, eval_every=0, eval_prompts=4,
                      prompts_per_step=8, group_size=8, ppo_epochs=epochs, mini_batches=mini_batches,
                      out=str(out))
    return train(cfg, show_progress=False, log=lambda s: None).run_dir


@pytest.fixture(scope="module")
def on_policy_run(warm_tiny_dir, tmp_path_factory) -> Path:
    return _grpo_run(tmp_path_factory.mktemp("ud") / "on", warm_tiny_dir, epochs=1, mini_batches=1)


def test_on_policy_all_arms_make_grpos_update(on_policy_run):
    result = probe_run(on_policy_run, [1], heldout=16, log=lambda s: None)
    assert result["baseline"] == "grpo" and [a["name"] for a in result["arms"]] == [a.name for a in ARMS]
    (entry,) = result["checkpoints"]
    assert entry["step"] == 1 and entry["run"] == on_policy_run.name
    assert entry["yardstick"] > 0 and entry["reference_update"] > 0
    assert set(entry["distance"]) == {a.name for a in ARMS[1:]}
    for name, d in entry["distance"].items():
        assert d / entry["yardstick"] < 1e-3, name  # eq. 17: m = 1 on-policy
        assert entry["arms"][name]["binding"] == 0.0  # r = 1: nothing to clip
        assert entry["arms"][name]["cosine"] > 0.999


def test_off_policy_arms_part_and_compare_reads_the_file(warm_tiny_dir, tmp_path):
    from dhpo_suite.science.checks import update_ratio

    run = _grpo_run(tmp_path / "grpo-s0", warm_tiny_dir, epochs=2, mini_batches=4)
    assert main([str(run), "--steps", "1", "--heldout", "16"]) == 0
    data = json.loads((tmp_path / "update_distance.json").read_text())  # in the sweep directory: run's parent
    (entry,) = data["checkpoints"]
    assert entry["distance"]["dhpo-a-branch"] > 1e-3 * entry["reference_update"]  # off-policy: s != r
    assert all(0.0 <= a["kept_share"] <= 1.0 for a in entry["arms"].values())
    ratio, how = update_ratio(data, "dhpo-e-branch", "grpo")
    assert how == "measured" and ratio == entry["distance"]["dhpo-e-branch"] / entry["yardstick"]
    pair = entry["pairs"]["dhpo-e-branch|dhpo-e-unified"]
    assert update_ratio(data, "dhpo-e-unified", "dhpo-e-branch")[0] == pair / entry["yardstick"]


def test_a_missing_checkpoint_is_one_line(on_policy_run, capsys):
    assert main([str(on_policy_run), "--steps", "7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no complete checkpoint at step 7" in err[0], err
