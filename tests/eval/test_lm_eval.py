"""lm-eval interoperability: the task YAMLs mirror the registry and run offline, scored by our grader."""

from pathlib import Path

import pytest
import yaml

from dhpo_suite.eval.benchmarks import BENCHMARKS, PAPER_BENCHMARKS, load_problems

TASKS = Path(__file__).parents[2] / "dhpo_suite" / "eval" / "lm_eval_tasks"


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


@pytest.mark.parametrize("name", PAPER_BENCHMARKS)
def test_task_yaml_mirrors_the_registry(name):
    cfg = yaml.load((TASKS / f"{name}.yaml").read_text(), Loader=_Loader)
    b = BENCHMARKS[name]
    assert cfg["task"] == f"dhpo_{name}" and cfg["dataset_path"] == b.hub_id
    assert cfg.get("dataset_name") == b.config and cfg["test_split"] == b.split
    assert cfg["repeats"] == b.samples == cfg["filter_list"][0]["filter"][0]["k"]
    assert cfg["metric_list"][0]["metric"] == f"avg@{b.samples}"
    assert cfg["process_docs"] == f"utils.process_docs_{name}" and cfg["process_results"] == "utils.process_results"
    g = cfg["generation_kwargs"]
    assert (g["temperature"], g["top_p"], g["max_gen_toks"]) == (1.0, 1.0, 16384)


def test_process_results_uses_the_grader():
    from dhpo_suite.eval.lm_eval_tasks import utils

    doc = {"dhpo_gold": ["4.5e33", "4.5 \\times 10^{33}"], "dhpo_problem": "P", "dhpo_id": "0"}
    assert utils.process_results(doc, [["so \\boxed{4.5 \\times 10^{33}}", "\\boxed{7}"]]) == {"avg@2": 0.5}
    assert utils.process_results(doc, ["\\boxed{4.5 \\times 10^{33}}"]) == {"avg@1": 1.0}
    assert utils.doc_to_text(doc).endswith("<|im_start|>user\nP\nPlease reason step by step, and put your final "
                                           "answer within \\boxed{}.<|im_end|>\n<|im_start|>assistant\n")


@pytest.mark.slow
def test_lm_eval_hf_runs_our_tasks_offline_on_the_tiny_model(tiny_model_dir, bench_dir, tmp_path):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    (tmp_path / "utils.py").write_text("from dhpo_suite.eval.lm_eval_tasks.utils import *  # noqa: F401,F403\n")
    for name in ("amc23",):
        (tmp_path / f"{name}_local.yaml").write_text(
            f"include: {TASKS / (name + '.yaml')}\ntask: dhpo_{name}_local\ndataset_path: json\n"
            f"dataset_kwargs:\n  data_files:\n    test: {bench_dir / (name + '.jsonl')}\ntest_split: test\n"
            "process_docs: !function utils.process_docs_local\n")
    out = simple_evaluate(model="hf", model_args={"pretrained": str(tiny_model_dir), "dtype": "float32",
                                                      "device": "cpu"},
                          tasks=["dhpo_amc23_local"], limit=2, log_samples=True,
                          gen_kwargs="max_gen_toks=8",
                          task_manager=TaskManager(include_path=[str(TASKS), str(tmp_path)], include_defaults=False),
                          batch_size=8)
    assert 0.0 <= out["results"]["dhpo_amc23_local"]["avg@4,all"] <= 1.0
    amc = out["samples"]["dhpo_amc23_local"]
    assert len(amc) == 2 and len(amc[0]["filtered_resps"][0]) == 4  # 4 repeats graded together
    first = load_problems("amc23", bench_dir, limit=1)[0]
    assert (amc[0]["doc"]["dhpo_id"], amc[0]["doc"]["dhpo_gold"]) == (first.id, list(first.gold))
