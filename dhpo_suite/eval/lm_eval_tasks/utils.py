"""lm-eval hooks for the dhpo_* tasks: problems from our registry (`load_problems`: local JSONL copies when env
DHPO_BENCHMARKS_DIR is set, else the hub through the same normalisation and repairs), prompts from our
templates as `dhpo-suite eval` chooses them for the model (lm-eval passes its model_args to the dataset loader),
responses scored by dhpo_suite.grading (the same grader as `dhpo-suite eval` and the training reward) with the
problem text. What lm-eval does not let a task see: whether a response was cut at max_gen_toks, so a truncated
response can be graded by the no-marker fallback `dhpo-suite eval` refuses for it (docs/eval.md).

Each task's metric is `avg@k` (k = the task's `repeats`): the mean correctness over the k responses.
"""

from __future__ import annotations

import atexit
import threading
from pathlib import Path

from dhpo_suite.eval.prompts import QWEN_BOXED

_pool = None
_lock = threading.Lock()


def load_benchmark(bench: str, pretrained: str | None = None, template: str | None = None, **_ignored) -> dict:
    """`custom_dataset` of every task: {"test": Dataset of dhpo_id, dhpo_problem, dhpo_gold, dhpo_prompt} for
    `bench` (the task's `metadata.bench`). lm-eval passes its model_args here too: with `pretrained` a model
    directory, each prompt is the one `dhpo-suite eval` sends that model (its chat template for an instruct model,
    else qwen-boxed; dhpo_suite.eval.runner.default_template); `--metadata '{"template": "chat"}'` chooses one.
    Rows that `dhpo-suite eval` would skip (over the size limit) are left out."""
    import datasets

    from dhpo_suite.eval.benchmarks import load_problems

    render = _renderer(pretrained, template)
    rows = [{"dhpo_id": p.id, "dhpo_problem": p.problem, "dhpo_gold": list(p.gold), "dhpo_bench": bench,
             "dhpo_prompt": render(p.problem)} for p in load_problems(bench, notify=print) if not p.skip]
    return {"test": datasets.Dataset.from_list(rows)}


def _renderer(pretrained: str | None, template: str | None):
    """problem -> prompt text: `template`, else the model's default as the evaluator chooses it."""
    from dhpo_suite.eval.prompts import is_chat_model, load_template

    tokenizer = None
    if pretrained and Path(pretrained).is_dir():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(pretrained)
    if template is None:
        template = "chat" if tokenizer is not None and is_chat_model(pretrained, tokenizer) else "qwen-boxed"
    chosen = load_template(template)
    return lambda problem: chosen.render(problem, tokenizer)


def doc_to_text(doc: dict) -> str:
    """The prompt `dhpo-suite eval` sends (load_benchmark), else SimpleRL's qwen-boxed prompt (ChatML)."""
    return doc.get("dhpo_prompt") or QWEN_BOXED.replace("{input}", doc["dhpo_problem"])


def doc_to_target(doc: dict) -> str:
    return doc["dhpo_gold"][0]


def process_results(doc: dict, results: list) -> dict:
    """avg@k over this doc's k responses (lm-eval passes the `take_first_k` list, or one string), graded as
    `dhpo-suite eval` grades them: the golds, the benchmark's policy and the problem text (a restatement of it is
    no answer). Not the truncation: lm-eval does not tell process_results which responses hit max_gen_toks."""
    responses = results[0] if results and isinstance(results[0], list) else results
    items = [{"response": r, "gold": doc["dhpo_gold"], "bench": doc.get("dhpo_bench"),
              "problem": doc.get("dhpo_problem")} for r in responses]
    verdicts = _grader().grade_many(items)
    return {f"avg@{len(responses)}": sum(v.correct for v in verdicts) / max(len(verdicts), 1)}


def _grader():
    """One grader pool for the process (lm-eval calls process_results once per document)."""
    global _pool
    from dhpo_suite.grading import GraderPool

    with _lock:
        if _pool is None:
            _pool = GraderPool(workers=1)
            atexit.register(_pool.close)
        return _pool
