"""lm-eval hooks for the dhpo_* tasks: problems from our registry (`load_problems`: local JSONL copies when env
DHPO_BENCHMARKS_DIR is set, else the hub through the same normalisation and repairs), prompts from our
templates, responses scored by dhpo_suite.grading (the same grader as `dhpo-suite eval` and the training
reward).

Each task's metric is `avg@k` (k = the task's `repeats`): the mean correctness over the k responses.
"""

from __future__ import annotations

from dhpo_suite.eval.prompts import QWEN_BOXED


def load_benchmark(bench: str, **_ignored) -> dict:
    """`custom_dataset` of every task: {"test": Dataset of dhpo_id, dhpo_problem, dhpo_gold} for `bench`
    (the task's `metadata.bench`). Rows that `dhpo-suite eval` would skip (over the size limit) are left out."""
    import datasets

    from dhpo_suite.eval.benchmarks import load_problems

    rows = [{"dhpo_id": p.id, "dhpo_problem": p.problem, "dhpo_gold": list(p.gold), "dhpo_bench": bench}
            for p in load_problems(bench, notify=print) if not p.skip]
    return {"test": datasets.Dataset.from_list(rows)}


def doc_to_text(doc: dict) -> str:
    """SimpleRL's qwen-boxed prompt (ChatML), as `dhpo-suite eval --template qwen-boxed`."""
    return QWEN_BOXED.replace("{input}", doc["dhpo_problem"])


def doc_to_target(doc: dict) -> str:
    return doc["dhpo_gold"][0]


def process_results(doc: dict, results: list) -> dict:
    """avg@k over this doc's k responses (lm-eval passes the `take_first_k` list, or one string)."""
    from dhpo_suite.grading import grade

    responses = results[0] if results and isinstance(results[0], list) else results
    verdicts = [grade(r, doc["dhpo_gold"], doc.get("dhpo_bench")) for r in responses]
    return {f"avg@{len(responses)}": sum(v.correct for v in verdicts) / max(len(verdicts), 1)}
