"""The update-distance probe (benchmarks/update_distance.py) on the real trainer and tiny model: one small sweep.

Expected values from the paper and from Adam, not from the probe: on-policy (one epoch, one mini-batch: r = s = 1
at the only optimizer step) DHPO-E's gradient is m·A·∇log π with m = 1 (eq. 17), GRPO's update: distance 0 up to
float rounding; so is GRPO 0.2/0.28's (no ratio has left 1, no clip acts). An arm that aggregates `token-mean`
weights each response by its length instead of 1/|o_i|: another gradient even on-policy, so the probe must
measure it apart (a probe that always said 0 would fail here). AdamW's step is proportional to its learning rate
for the same gradient and moments (Kingma & Ba, Algorithm 1; the decay term too), so the arm at half the lr moves
half as far, in the same direction. The reference arm against a second rollout moves (yardstick > 0), and
compare's check reads the file's ratio under compare's own labels.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from benchmarks.update_distance import Arm, _outside, arm_of, main, probe_run, sweep_arms
from dhpo_suite.runs import Manifest
from dhpo_suite.train.objectives import get_objective

DATA = Path(__file__).resolve().parents[2] / "docs" / "reproduction" / "data" / "chain"
TOKEN_MEAN = Arm("grpo-token-mean", "grpo", {"eps_low": 0.2, "eps_high": 0.2, "loss_agg_mode": "token-mean"})
LR = 1e-4


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    """A sweep directory as `dhpo-suite sweep` lays one out: GRPO with checkpoints (the probed run), DHPO-E, a
    clip-higher control in its own folder and GRPO at half the lr (one step each: only their manifests count)."""
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import TrainConfig, train
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    default = TrainConfig()  # the default run's warm start (the cache tests/train builds too)
    task = get_task(default.task)
    with GraderPool(workers=1) as pool:
        model = resolve_model_dir(default, task, sft_accuracy_fn(default, task, pool), log=print)
    root = tmp_path_factory.mktemp("ud")
    common = dict(model=str(model), eval_every=0, eval_prompts=4, prompts_per_step=8, group_size=8, ppo_epochs=1,
                  mini_batches=1, lr=LR)
    for out, steps, extra in (("grpo-s0", 2, {"algo": "grpo"}), ("dhpo-e-branch-s0", 1, {"algo": "dhpo-e"}),
                              ("clip-higher/grpo-s0", 1, {"algo": "grpo", "hparams": {"eps_high": 0.28}}),
                              ("half-lr/grpo-s0", 1, {"algo": "grpo", "lr": LR / 2})):
        cfg = TrainConfig(**{**common, **extra}, steps=steps, checkpoint_every=1, out=str(root / out))
        train(cfg, show_progress=False, log=lambda s: None)
    return root


@pytest.mark.slow  # a real training run, then one update per arm
def test_on_policy_dhpo_makes_grpos_update_and_another_gradient_is_seen(sweep):
    from dhpo_suite.science.checks import update_ratio

    run = sweep / "grpo-s0"
    ref, *others = sweep_arms(sweep, run)
    arms = {a.name: a for a in others}
    data = probe_run(run, [1], arms=(ref, arms["dhpo-e-branch"], TOKEN_MEAN), heldout=16, log=lambda s: None)
    (entry,) = data["checkpoints"]
    assert entry["step"] == 1 and entry["run"] == run.name
    assert entry["yardstick"] > 0 and entry["reference_update"] > 0
    assert entry["distance"]["dhpo-e-branch"] / entry["yardstick"] < 1e-3  # eq. 17: m = 1 on-policy
    assert entry["arms"]["dhpo-e-branch"]["binding"] == 0.0  # r = 1: nothing to clip
    assert entry["distance"]["grpo-token-mean"] > 1e-3 * entry["reference_update"]  # another gradient: seen
    ratio, how = update_ratio(data, "dhpo-e-branch", ref.name)  # what compare's manipulation check reads
    assert how == "measured" and ratio == entry["distance"]["dhpo-e-branch"] / entry["yardstick"]


@pytest.mark.slow  # a real training run, then one update per arm
def test_every_label_of_the_sweep_gets_its_distance_under_compares_label(sweep):
    from dhpo_suite.science.checks import update_ratio
    from dhpo_suite.science.compare import load_sweep

    assert main([str(sweep / "grpo-s0"), "--steps", "1", "--heldout", "16"]) == 0
    data = json.loads((sweep / "update_distance.json").read_text())
    labels = set(load_sweep(sweep)[0]["label"])  # the labels compare judges
    assert labels == {"grpo · lr=0.0001", "grpo-eps_high=0.28 · lr=0.0001", "grpo · lr=5e-05", "dhpo-e-branch"}
    assert data["baseline"] == "grpo · lr=0.0001" and {a["name"] for a in data["arms"]} == labels
    for label in labels - {data["baseline"]}:
        assert update_ratio(data, label, data["baseline"])[1] == "measured"
    (entry,) = data["checkpoints"]
    assert entry["distance"]["grpo-eps_high=0.28 · lr=0.0001"] / entry["yardstick"] < 1e-3  # r = 1: clip inert
    half, full = entry["arms"]["grpo · lr=5e-05"], entry["arms"][data["baseline"]]
    assert 0.45 < half["update"] / full["update"] < 0.55 and half["cosine"] > 0.99  # AdamW: step ∝ lr


@pytest.mark.slow  # a real training run, then one update per arm
def test_refusals_are_one_line(sweep, capsys, tmp_path):
    for argv, words in (([str(sweep / "grpo-s0"), "--steps", "7"], "no complete checkpoint at step 7"),
                        ([str(sweep / "grpo-s0"), str(sweep / "half-lr" / "grpo-s0"), "--sweep", str(sweep)],
                         "probe runs of one label"),
                        ([str(sweep / "grpo-s0"), "--sweep", str(tmp_path)], "is not a run under")):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and words in err[0], err


def test_an_arm_with_another_rollout_is_skipped_with_its_reason():
    from dhpo_suite.train.embedded import TrainConfig

    why = _outside(Arm("grpo · group_size=4", "grpo", settings={"group_size": 4, "lr": 5e-5}), TrainConfig())
    assert why is not None and "group_size 4 (the probed run's: 8)" in why
    assert _outside(Arm("grpo · lr=5e-05", "grpo", settings={"group_size": 8, "lr": 5e-5}), TrainConfig()) is None


def test_issue_26s_arms_come_back_from_the_committed_runs():
    """The five arms issue 26's probe named by hand (the committed update_distance.json) are what the committed
    runs' manifests (their hparams, kept in runs.csv) now give: the same objective settings and lr."""
    recorded = {a["name"]: a for a in json.loads((DATA / "update_distance.json").read_text())["arms"]}
    runs = pd.read_csv(DATA / "runs.csv").drop_duplicates("label")
    assert set(runs["label"]) == set(recorded)
    for row in runs.itertuples():
        arm = arm_of(row.label, Manifest(algorithm=row.algorithm, hparams=json.loads(row.hparams)))
        old = recorded[row.label]
        assert arm.algo == old["algo"]
        assert get_objective(arm.algo, **arm.hparams).hparams == get_objective(old["algo"], **old["hparams"]).hparams
        assert arm.settings["lr"] == 1e-4 and "weight_decay" not in arm.settings  # not recorded then: the run's
