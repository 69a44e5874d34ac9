"""verl's own actor worker (FSDP2 engine, optimizer, ppo_loss) on CPU/gloo with every objective.

Nothing of verl is mocked: `dhpo_suite.testing.verl_worker` builds `ActorRolloutRefWorker` from verl's composed
config and calls its `compute_log_prob` / `update_actor` with the batches verl's trainers send: the v1 trainer's
(verl's default: TransferQueue, jagged nested tensors, `rm_scores`, padding rows; through the trainer's own
methods, verl_v1_feed.py) and the legacy trainer's (padded DataProto, any number of ranks). Runs in spawned
processes (verl's platform, the process group and the local Ray instance of TransferQueue are per-process state).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dhpo_suite.runs import RunReader
from dhpo_suite.train.objectives import OBJECTIVES
from dhpo_suite.testing.verl_worker import LocalCase, gold, problem, run_distributed
from dhpo_suite.train.verl_backend.presets import algorithm_settings

pytestmark = pytest.mark.slow

# dhpo-e first: its first step runs on the freshly loaded model, like the 2-rank run it is compared with.
ORDER = ("dhpo-e",) + tuple(n for n in OBJECTIVES if n != "dhpo-e")
# 3 prompts x 2 responses on 2 ranks: prompt 1's group is split across the ranks.
CASE = dict(prompts=3, group_size=2, mini_batches=1, steps=1)
EXACT = ["tokens/count", "responses/count", "groups/count", "groups/all_correct_frac", "groups/all_wrong_frac",
         "length/mean", "length/max", "length/truncated_frac", "reward/mean", "adv/pos_frac", "adv/neg_frac"]


def assert_problems_recorded(reader: RunReader, step: int, group_size: int = 2) -> None:
    """Every kept response of `step` records its prompt's problem and gold, as the batch's `raw_prompt` and
    `reward_model.ground_truth` held them (the harness writes a distinct problem and answer per prompt)."""
    kept = reader.responses(step)
    assert len(kept) > 0
    for _, row in kept.iterrows():
        p = int(row["response_id"]) // group_size
        assert (row["prompt"], row["gold"]) == (problem(step, p), gold(step, p)), row["response_id"]


@pytest.fixture(scope="module")
def sweep(tiny_model_dir, tmp_path_factory):
    runs = tmp_path_factory.mktemp("verl-sweep")
    case = LocalCase(str(tiny_model_dir), ORDER, run_dir=str(runs), **CASE)
    return runs, {r["objective"]: r for r in run_distributed(case, world=1)[0]}


@pytest.fixture(scope="module")
def two_ranks(tiny_model_dir, tmp_path_factory):
    runs = tmp_path_factory.mktemp("verl-2ranks")
    case = LocalCase(str(tiny_model_dir), ("dhpo-e",), run_dir=str(runs), save_checkpoint=7, **{**CASE, "steps": 2})
    return runs, run_distributed(case, world=2)


@pytest.fixture(scope="module")
def v1(tiny_model_dir, tmp_path_factory):
    # 3 prompts x 2 responses, mini-batches of 2 prompts: verl pads the 6 rows to 8 (two empty responses),
    # whose 128-token synthetic sequences need a token budget above 128.
    runs = tmp_path_factory.mktemp("verl-v1")
    case = LocalCase(str(tiny_model_dir), ("dhpo-e", "grpo"), run_dir=str(runs), prompts=3, group_size=2,
                     ppo_mini_batch=2, steps=2, feed="v1", max_tokens_per_gpu=160)
    return runs, run_distributed(case, world=1)[0]


def test_v1_trainer_batches_train_and_telemetry_counts_what_went_in(v1):
    runs, results = v1
    assert [(r["objective"], r["step"]) for r in results] == [(o, s) for o in ("dhpo-e", "grpo") for s in (1, 2)]
    for r in results:
        assert r["metrics"]["batch_rows"] == 8, "verl did not pad the batch: the padding path is untested"
        assert r["weight_change"] > 0 and math.isfinite(r["metrics"]["actor/pg_loss"])
        row = RunReader(runs / r["objective"]).scalars().set_index("step").loc[r["step"]]
        rewards, lengths = np.array(r["rewards"]), np.array(r["lengths"])  # what the rollout put in TQ
        assert (row["responses/count"], row["groups/count"]) == (6, 3)  # padding rows are no responses
        assert row["tokens/count"] == lengths.sum()
        assert row["reward/mean"] == pytest.approx(rewards.mean())  # the agent loop's rm_scores
        assert row["length/mean"] == pytest.approx(lengths.mean())
        assert row["length/truncated_frac"] == pytest.approx((lengths >= 16).mean())  # rollout.response_length
    dhpo_e = RunReader(runs / "dhpo-e").scalars()
    assert ((dhpo_e["w/mean"] > 0) & (dhpo_e["w/mean"] < 1) & ((dhpo_e["w/mean"] - 0.5).abs() > 1e-3)).all()
    assert set(RunReader(runs / "dhpo-e").samples(1)["response_id"]) <= set(range(6))
    for r in results:  # TransferQueue carries the dataset row's raw_prompt and reward_model to the worker
        assert_problems_recorded(RunReader(runs / r["objective"]), r["step"])


def test_every_objective_trains_and_writes_a_step(sweep):
    runs, results = sweep
    assert set(results) == set(OBJECTIVES)
    for name, r in results.items():
        assert r["weight_change"] > 0, f"{name}: weights did not change"
        assert all(math.isfinite(v) for v in r["metrics"]["actor/pg_loss"]), name
        reader = RunReader(runs / name)
        assert reader.steps() == [1], name
        scalars = reader.scalars().iloc[0]
        assert scalars["tokens/count"] > 0 and math.isfinite(scalars["loss/token_mean"]), name
        assert scalars["grad_norm"] > 0 and scalars["lr"] > 0, name
        assert reader.manifest.algorithm == name and reader.manifest.backend == "verl"
        # verl's engine computes the entropy with the plugin's detached, vocabulary-chunked function (no entropy
        # bonus: entropy_coeff=0), not verl's entropy_from_logits (issue 42)
        assert r["entropy_function"] == "entropy_without_grad", name


@pytest.mark.parametrize("name", ["dhpo-e", "dhpo"])
def test_entropy_mixing_gets_verls_entropy_of_the_same_tokens(sweep, name):
    runs, results = sweep
    # verl's own entropy metric (ppo_loss aggregates the same model_output["entropy"] with actor.loss_agg_mode
    # over the one mini-batch) must equal the entropy our loss and telemetry saw, token for token: every
    # response is a sample, with its per-token entropy.
    (verl_entropy,) = results[name]["metrics"]["actor/entropy_loss"]
    reader = RunReader(runs / name)
    per_response = [np.asarray(e, dtype=np.float64) for e in reader.samples(1)["entropy"]]
    assert len(per_response) == CASE["prompts"] * 2
    token_mean = np.concatenate(per_response).mean()
    aggregated = {"token-mean": token_mean, "seq-mean-token-mean": np.mean([e.mean() for e in per_response])}
    mode = dict(algorithm_settings(name).hparams)["loss_agg_mode"]
    assert verl_entropy == pytest.approx(aggregated[mode], rel=1e-5), mode
    scalars = reader.scalars().iloc[0]
    assert scalars["entropy/mean"] == pytest.approx(token_mean, rel=1e-5)
    w = scalars["w/mean"]
    assert 0 < w < 1 and abs(w - 0.5) > 1e-3  # an entropy-dependent weight, not the constant


def test_non_entropy_objectives_mix_as_configured(sweep):
    runs, _ = sweep
    assert RunReader(runs / "dhpo-a").scalars().iloc[0]["w/mean"] == pytest.approx(0.5)
    for name in ("grpo", "gspo"):
        assert "w/mean" not in RunReader(runs / name).scalars().columns or \
            np.isnan(RunReader(runs / name).scalars().iloc[0]["w/mean"])


def test_two_ranks_merge_into_one_run_directory(sweep, two_ranks):
    runs2, results = two_ranks
    assert [r["step"] for r in results[0]] == [1, 2] and all(r["weight_change"] > 0 for r in results[1])
    merged = RunReader(runs2 / "dhpo-e")
    assert merged.steps() == [1, 2, 8]  # the last step ran after loading checkpoint global_step_7
    one = RunReader(sweep[0] / "dhpo-e").scalars().iloc[0]
    two = merged.scalars().iloc[0]
    for key in EXACT:  # integer facts: exact under the merge (the split group is recognised as one)
        assert two[key] == one[key], key
    assert one["groups/count"] == 3
    for key in ("entropy/mean", "ratio/token/mean", "ratio/sequence/mean", "w/mean", "kl/k3"):
        assert two[key] == pytest.approx(one[key], rel=1e-4, abs=1e-6), key
    ids_one = sorted(RunReader(sweep[0] / "dhpo-e").samples(1)["response_id"])
    assert sorted(merged.samples(1)["response_id"]) == ids_one  # hash-chosen samples: same draw
    # Rank 0 writes the step; the problems of the prompts whose rows sit on rank 1 (and of the split group)
    # reach it with the uids.
    assert {int(i) // 2 for i in merged.responses(1)["response_id"]} == {0, 1, 2}
    for step in (1, 2):
        assert_problems_recorded(merged, step)


def test_checkpoint_lands_in_the_run_directory_as_an_hf_model(two_ranks):
    runs, _ = two_ranks
    ckpts = RunReader(runs / "dhpo-e").checkpoints()
    assert list(ckpts) == [7]
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(ckpts[7])
    assert model.config.model_type == "qwen3"
