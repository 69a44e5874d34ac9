"""lm-eval interoperability: one base YAML, tasks that read the local JSONL copies offline through our
registry, scored by our grader."""

from pathlib import Path

import pytest
import yaml

from dhpo_suite.eval.benchmarks import BENCHMARKS, PAPER_BENCHMARKS, load_problems

TASKS = Path(__file__).parents[2] / "dhpo_suite" / "eval" / "lm_eval_tasks"


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def _yaml(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=_Loader)


def test_one_base_and_one_short_file_per_paper_benchmark():
    # Every paper benchmark has its file; one added later (docs/extending.md) is a registered benchmark's file.
    assert set(PAPER_BENCHMARKS) <= {p.stem for p in TASKS.glob("*.yaml")} <= set(BENCHMARKS)
    base = _yaml(TASKS / "_dhpo_template_yaml")
    assert base["custom_dataset"] == "utils.load_benchmark" and base["process_results"] == "utils.process_results"
    g = base["generation_kwargs"]
    assert (g["temperature"], g["top_p"], g["max_gen_toks"]) == (1.0, 1.0, 16384)  # the paper's protocol
    for name in (p.stem for p in TASKS.glob("*.yaml")):
        cfg = _yaml(TASKS / f"{name}.yaml")
        assert cfg["include"] == "_dhpo_template_yaml" and cfg["task"] == f"dhpo_{name}"
        assert cfg["metadata"]["bench"] == name
        assert cfg["repeats"] == BENCHMARKS[name].samples == cfg["filter_list"][0]["filter"][0]["k"]
        assert cfg["metric_list"][0]["metric"] == f"avg@{BENCHMARKS[name].samples}"


def test_tasks_read_the_local_copies_offline_through_the_registry(bench_dir, monkeypatch):
    """lm-eval's own task loading (TaskManager + the tasks' custom_dataset), no network: the docs are the
    problems `dhpo-suite eval --data-dir` evaluates, golds with answer_alt included."""
    from lm_eval.tasks import TaskManager

    monkeypatch.setenv("DHPO_BENCHMARKS_DIR", str(bench_dir))
    flat = TaskManager(include_path=[str(TASKS)], include_defaults=False).load(["dhpo_math"])["tasks"]
    assert sorted(flat) == sorted(f"dhpo_{p.stem}" for p in TASKS.glob("*.yaml"))  # the group: every file
    for name in ("minerva_math", "aime25"):
        docs = list(flat[f"dhpo_{name}"].test_docs())
        want = load_problems(name, bench_dir)
        assert [(d["dhpo_id"], d["dhpo_problem"], tuple(d["dhpo_gold"])) for d in docs] == \
            [(p.id, p.problem, p.gold) for p in want]
    assert flat["dhpo_amc23"].config.repeats == 4


def test_process_results_uses_the_grader():
    from dhpo_suite.eval.lm_eval_tasks import utils

    doc = {"dhpo_gold": ["4.5e33", "4.5 \\times 10^{33}"], "dhpo_problem": "P", "dhpo_id": "0",
           "dhpo_bench": "minerva_math"}
    assert utils.process_results(doc, [["so \\boxed{4.5 \\times 10^{33}}", "\\boxed{7}"]]) == {"avg@2": 0.5}
    assert utils.process_results(doc, ["\\boxed{4.5 \\times 10^{33}}"]) == {"avg@1": 1.0}
    assert utils.doc_to_text(doc).endswith("<|im_start|>user\nP\nPlease reason step by step, and put your final "
                                           "answer within \\boxed{}.<|im_end|>\n<|im_start|>assistant\n")


def test_process_results_grades_with_the_problem_text_as_eval_does():
    """A response that only restates the problem is no answer (as `dhpo-suite eval` grades it); without the
    problem text the fallback would take its 14."""
    from dhpo_suite.eval.lm_eval_tasks import utils

    doc = {"dhpo_gold": ["14"], "dhpo_problem": "Tom has 14 apples. Tom has 14 bags of rice. How many apples?",
           "dhpo_id": "0", "dhpo_bench": "gsm8k"}
    assert utils.process_results(doc, [["Tom has 14 bags of rice.", "So he has 14 apples."]]) == {"avg@2": 0.5}


def test_an_instruct_model_gets_its_chat_template_through_lm_evals_model_args(tiny_model_dir, bench_dir,
                                                                              monkeypatch, tmp_path):
    """lm-eval hands its model_args (pretrained=...) to the dataset loader: an instruct model's prompts are its
    own chat template with the boxed instruction, as `dhpo-suite eval` sends them; a base model's qwen-boxed."""
    import shutil

    from transformers import AutoTokenizer

    from dhpo_suite.eval.lm_eval_tasks import utils

    monkeypatch.setenv("DHPO_BENCHMARKS_DIR", str(bench_dir))
    instruct = tmp_path / "tiny-instruct"
    shutil.copytree(tiny_model_dir, instruct)
    problem = load_problems("amc23", bench_dir, limit=1)[0].problem
    chat = utils.load_benchmark("amc23", pretrained=str(instruct))["test"][0]
    tokenizer = AutoTokenizer.from_pretrained(instruct)
    message = problem + "\nPlease reason step by step, and put your final answer within \\boxed{}."
    assert utils.doc_to_text(chat) == tokenizer.apply_chat_template([{"role": "user", "content": message}],
                                                                    tokenize=False, add_generation_prompt=True)
    base = utils.load_benchmark("amc23", pretrained=str(tiny_model_dir))["test"][0]
    assert utils.doc_to_text(base).startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                                              "<|im_start|>user\n" + problem + "\nPlease reason step by step")


@pytest.mark.slow
def test_lm_eval_hf_runs_our_tasks_offline_on_the_tiny_model(tiny_model_dir, bench_dir, monkeypatch):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    monkeypatch.setenv("DHPO_BENCHMARKS_DIR", str(bench_dir))
    out = simple_evaluate(model="hf", model_args={"pretrained": str(tiny_model_dir), "dtype": "float32",
                                                      "device": "cpu"},
                          tasks=["dhpo_amc23"], limit=2, log_samples=True, gen_kwargs="max_gen_toks=8",
                          task_manager=TaskManager(include_path=[str(TASKS)], include_defaults=False),
                          batch_size=8)
    assert 0.0 <= out["results"]["dhpo_amc23"]["avg@4,all"] <= 1.0
    amc = out["samples"]["dhpo_amc23"]
    assert len(amc) == 2 and len(amc[0]["filtered_resps"][0]) == 4  # 4 repeats graded together
    first = load_problems("amc23", bench_dir, limit=1)[0]
    assert (amc[0]["doc"]["dhpo_id"], amc[0]["doc"]["dhpo_gold"]) == (first.id, list(first.gold))
