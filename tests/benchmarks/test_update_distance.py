"""The update-distance probe (benchmarks/update_distance.py) on the real trainer and tiny model, one small run.

Expected values from the paper, not from the probe: on-policy (one epoch, one mini-batch: r = s = 1 at the only
optimizer step) DHPO-E's gradient is m·A·∇log π with m = 1 (eq. 17), GRPO's update: distance 0 up to float
rounding. An arm that aggregates `token-mean` weights each response by its length instead of 1/|o_i|: another
gradient even on-policy, so the probe must measure it apart (a probe that always said 0 would fail here). The
reference arm against a second rollout moves (yardstick > 0), and compare's check reads the file's ratio.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.update_distance import ARMS, Arm, main, probe_run

pytestmark = pytest.mark.slow  # a real training run, then one update per arm

TOKEN_MEAN = Arm("grpo-token-mean", "grpo", {"eps_low": 0.2, "eps_high": 0.2, "loss_agg_mode": "token-mean"})


@pytest.fixture(scope="module")
def on_policy_run(tmp_path_factory) -> Path:
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import TrainConfig, train
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    default = TrainConfig()  # the default run's warm start (the cache tests/train builds too)
    task = get_task(default.task)
    with GraderPool(workers=1) as pool:
        model = resolve_model_dir(default, task, sft_accuracy_fn(default, task, pool), log=print)
    cfg = TrainConfig(algo="grpo", model=str(model), steps=2, checkpoint_every=1, eval_every=0, eval_prompts=4,
                      prompts_per_step=8, group_size=8, ppo_epochs=1, mini_batches=1,
                      out=str(tmp_path_factory.mktemp("ud") / "grpo-s0"))
    return train(cfg, show_progress=False, log=lambda s: None).run_dir


def test_on_policy_dhpo_makes_grpos_update_and_another_gradient_is_seen(on_policy_run):
    from dhpo_suite.science.checks import update_ratio

    dhpo_e = next(a for a in ARMS if a.name == "dhpo-e-branch")
    data = probe_run(on_policy_run, [1], arms=(ARMS[0], dhpo_e, TOKEN_MEAN), heldout=16, log=lambda s: None)
    (entry,) = data["checkpoints"]
    assert entry["step"] == 1 and entry["run"] == on_policy_run.name
    assert entry["yardstick"] > 0 and entry["reference_update"] > 0
    assert entry["distance"]["dhpo-e-branch"] / entry["yardstick"] < 1e-3  # eq. 17: m = 1 on-policy
    assert entry["arms"]["dhpo-e-branch"]["binding"] == 0.0  # r = 1: nothing to clip
    assert entry["distance"]["grpo-token-mean"] > 1e-3 * entry["reference_update"]  # another gradient: seen
    ratio, how = update_ratio(data, "dhpo-e-branch", "grpo")  # what compare's manipulation check reads
    assert how == "measured" and ratio == entry["distance"]["dhpo-e-branch"] / entry["yardstick"]


def test_a_missing_checkpoint_is_one_line(on_policy_run, capsys):
    assert main([str(on_policy_run), "--steps", "7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no complete checkpoint at step 7" in err[0], err
