"""The training rewards read `answer_source`: a policy can pay unmarked (fallback) answers less."""

from __future__ import annotations

import pytest

from dhpo_suite.train.embedded.reward import grade_rewards, unmarked_share
from dhpo_suite.train.verl_backend.reward import compute_score

TEXTS = ["so it is $\\boxed{12}$", "Final Answer: The final answer is $12$. I hope it is correct.",
         "after all that we are left with 12 eggs", "AZYUK12A", "so it is $\\boxed{13}$"]


def test_embedded_reward_unmarked_policy(pool):
    default, verdicts = grade_rewards(pool, TEXTS, ["12"] * 5)
    strict, _ = grade_rewards(pool, TEXTS, ["12"] * 5, unmarked=0.0)
    assert [v.answer_source for v in verdicts] == ["boxed", "marker", "fallback", None, "boxed"]
    assert default.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
    assert strict.tolist() == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert unmarked_share(verdicts) == 0.2


def test_verl_reward_unmarked_policy():
    unmarked = compute_score("math", TEXTS[2], "12")
    assert unmarked == {"score": 1.0, "acc": 1.0, "no_answer": 0.0, "unmarked": 1.0}
    assert compute_score("math", TEXTS[2], "12", reward_unmarked=0.0)["score"] == 0.0
    assert compute_score("math", TEXTS[0], "12", reward_unmarked=0.0)["score"] == 1.0


def test_reward_unmarked_is_a_checked_train_option():
    from dhpo_suite.train.embedded.config import ConfigError, TrainConfig

    assert TrainConfig(reward_unmarked=0.0).validate().reward_unmarked == 0.0
    with pytest.raises(ConfigError, match="reward_unmarked"):
        TrainConfig(reward_unmarked=2.0).validate()
