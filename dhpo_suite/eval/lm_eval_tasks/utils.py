"""lm-eval hooks for the dhpo_* tasks: rows normalised through our registry, prompts from our templates,
responses scored by dhpo_suite.grading (the same grader as `dhpo-suite eval` and the training reward).

Each task's metric is `avg@k` (k = the task's `repeats`): the mean correctness over the k responses.
"""

from __future__ import annotations

from dhpo_suite.eval.benchmarks import BENCHMARKS, normalize_row
from dhpo_suite.eval.prompts import QWEN_BOXED


def _process_docs(name: str):
    bench = BENCHMARKS[name]

    def process_docs(dataset):
        return dataset.map(lambda row, i: _doc(bench, row, i), with_indices=True)

    return process_docs


def process_docs_local(dataset):
    """For local JSONL files already in our fields (id, problem, answer[, answer_alt])."""
    return dataset.map(lambda row, i: _doc(None, row, i), with_indices=True)


def _doc(bench, row: dict, index: int) -> dict:
    row = normalize_row(bench, dict(row), index) if bench is not None else row
    alt = row.get("answer_alt") or []
    alt = [alt] if isinstance(alt, str) else list(alt)
    return {"dhpo_id": str(row["id"]), "dhpo_problem": row["problem"], "dhpo_gold": [row["answer"], *alt]}


for _name in BENCHMARKS:
    globals()[f"process_docs_{_name}"] = _process_docs(_name)


def doc_to_text(doc: dict) -> str:
    """SimpleRL's qwen-boxed prompt (ChatML), as `dhpo-suite eval --template qwen-boxed`."""
    return QWEN_BOXED.replace("{input}", doc["dhpo_problem"])


def doc_to_target(doc: dict) -> str:
    return doc["dhpo_gold"][0]


def process_results(doc: dict, results: list) -> dict:
    """avg@k over this doc's k responses (lm-eval passes the `take_first_k` list, or one string)."""
    from dhpo_suite.grading import grade

    responses = results[0] if results and isinstance(results[0], list) else results
    verdicts = [grade(r, doc["dhpo_gold"]) for r in responses]
    return {f"avg@{len(responses)}": sum(v.correct for v in verdicts) / max(len(verdicts), 1)}
