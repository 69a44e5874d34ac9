"""verl's custom reward function: the rule reward of the paper, graded by dhpo-suite's one grader.

Wired by the launcher as

    reward.custom_reward_function.path=pkg://dhpo_suite.train.verl_backend.reward
    reward.custom_reward_function.name=compute_score

verl's reward manager calls it once per response with the row's `data_source`, the decoded response, the
`reward_model.ground_truth` written by `dhpo-suite data prepare` (a string, or a list of accepted answers)
and `extra_info`. The reward is 1.0 when the grader (`dhpo_suite.grading.grade`, the evaluator's grader:
extraction + math-verify in a sandboxed worker with a timeout) says correct, else 0.0. A correct answer
found only by the grader's no-marker fallback (no \\boxed{}, no answer line) earns `reward_unmarked`
(default 1.0; set `reward.custom_reward_function.reward_kwargs.reward_unmarked=0` to pay only marked
answers); the returned `unmarked` (1.0 for such an answer) is logged by verl, so its share is in telemetry.
"""

from __future__ import annotations

from typing import Any

__all__ = ["compute_score"]


def compute_score(
    data_source: str | None,
    solution_str: str,
    ground_truth: Any,
    extra_info: dict | None = None,
    reward_unmarked: float = 1.0,
    **_: Any,
) -> dict[str, float]:
    """{"score", "acc" (1.0 when correct), "no_answer" (1.0 when no final answer was found), "unmarked"
    (1.0 when the answer came from the no-marker fallback)} for one response."""
    from dhpo_suite.grading import grade

    if hasattr(ground_truth, "tolist"):  # a list column comes back from Parquet as a numpy array
        ground_truth = ground_truth.tolist()
    gold = [str(g) for g in ground_truth] if isinstance(ground_truth, (list, tuple)) else str(ground_truth)
    verdict = grade(solution_str, gold, bench=None)
    unmarked = verdict.answer_source == "fallback"
    score = (float(reward_unmarked) if unmarked else 1.0) if verdict.correct else 0.0
    return {"score": score, "acc": float(verdict.correct), "no_answer": float(verdict.status == "no_answer"),
            "unmarked": float(unmarked)}
