"""The evaluator as a new user meets it (issue 29): model names, the chat template for chat models, the hub
failure naming --data-dir, and --protocol simplerl against SimpleRL-Zoo's own harness."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.eval.prompts import is_chat_model
from dhpo_suite.eval.protocols import PROTOCOLS, simplerl_question

# ---- --protocol simplerl: the values of SimpleRL-Zoo's harness, typed from hkust-nlp/simpleRL-reason at cf1c785,
# examples/simplelr_math_eval/math_eval.py lines 253-270 (prompt type "qwen-boxed" contains "qwen") and its
# README's evaluation command (--template qwen-boxed --temperature 1.0 --top_p 0.95 --max_tokens 16000).
SIMPLERL_STOP = ["</s>", "<|im_end|>", "<|endoftext|>", "assistant", "user", "_end", "_start"]


def test_simplerl_protocol_is_simplerls_harness():
    p = PROTOCOLS["simplerl"]
    assert list(p.stop) == SIMPLERL_STOP
    assert (p.max_new_tokens, p.template, p.temperature, p.top_p) == (16000, "qwen-boxed", 1.0, 0.95)


@pytest.mark.parametrize("question, gold, expected", [
    # parser.py parse_question: the question field, a suffix for yes/no and true/false golds, then .strip()
    ("  Find $x$ if $2x = 4$.\n\n", "2", "Find $x$ if $2x = 4$."),
    ("Is 7 prime?\n", "Yes", "Is 7 prime?\n (Yes or No)"),
    ("Every even number is prime. ", "false", "Every even number is prime.  (True or False)"),
    ("\tNo change needed", "4", "No change needed"),
])
def test_simplerl_question_text(question, gold, expected):
    assert simplerl_question(question, gold) == expected


@pytest.mark.slow  # the real vLLM engine
def test_simplerl_protocol_end_to_end(engine, tmp_path):
    """The real engine under --protocol simplerl: SimpleRL's stop strings and budget are recorded (and resume
    checks them), the prompt holds the stripped question, and no response runs past a stop string."""
    from dhpo_suite.eval.runner import EvalSettings, evaluate
    from dhpo_suite.runs import eval_results as er

    data = tmp_path / "data"
    data.mkdir()
    (data / "math500.jsonl").write_text('{"id": "1", "problem": "  What is 1 + 1?\\n", "answer": "2"}\n'
                                        '{"id": "2", "problem": "Is 7 prime?", "answer": "Yes"}\n')
    settings = EvalSettings(protocol="simplerl", data_dir=str(data), top_p=0.95)
    evaluate(engine, ["math500"], tmp_path / "out", settings, notify=lambda m: None)
    entry = er.read_json(tmp_path / "out" / er.CONFIG)["benches"]["math500"]
    assert entry["stop"] == SIMPLERL_STOP and entry["template"] == "qwen-boxed" and entry["max_new_tokens"] == 16000
    records = {r["problem_id"]: r for r in er.read_samples(er.samples_path(tmp_path / "out", "math500")).records}
    assert "<|im_start|>user\nWhat is 1 + 1?\nPlease reason" in records["1"]["prompt"]
    assert "<|im_start|>user\nIs 7 prime? (Yes or No)\nPlease reason" in records["2"]["prompt"]
    assert not any(s in r["response"] for r in records.values() for s in SIMPLERL_STOP)


# ---- the chat template for chat models
@pytest.mark.parametrize("name, chat", [
    ("Qwen2.5-Math-7B", False),  # the paper's base model ships a chat template too; SimpleRL prompts it raw
    ("Qwen2.5-Math-7B-Instruct", True), ("SmolLM2-135M-Instruct", True), ("gemma-2-2b-it", True),
    ("deepseek-llm-7b-chat", True), ("Llama-3.1-8B", False), ("digit-model", False),
])
def test_chat_models_are_told_by_template_and_name(tiny_model_dir, tmp_path, name, chat):
    from transformers import AutoTokenizer

    model = shutil.copytree(tiny_model_dir, tmp_path / name)
    tokenizer = AutoTokenizer.from_pretrained(model)
    assert tokenizer.chat_template  # the tiny model's tokenizer has one, as every model here
    assert is_chat_model(model, tokenizer) is chat
    tokenizer.chat_template = None
    assert not is_chat_model(model, tokenizer)  # no chat template: never the chat default


@pytest.mark.slow  # the real vLLM engine
def test_an_instruct_model_gets_its_chat_template_by_default(engine, tmp_path, monkeypatch):
    """The engine's model renamed as an instruct model: without --template the paper's benchmarks use `chat`
    (said once), a task keeps its own, and --template qwen-boxed still wins."""
    from dhpo_suite.eval.runner import default_template

    monkeypatch.setattr(engine, "model", str(tmp_path / "Qwen2.5-Math-7B-Instruct"))
    assert default_template(engine, "math500") == "chat"
    assert default_template(engine, "arithmetic") == "task"
    assert default_template(engine, "math500", "simplerl") == "qwen-boxed"
    monkeypatch.setattr(engine, "model", str(tmp_path / "Qwen2.5-Math-7B"))
    assert default_template(engine, "math500") == "qwen-boxed"


# ---- names train accepts
@pytest.mark.slow  # converts SmolLM2-135M (22 s)
def test_eval_accepts_smollm2_by_the_name_train_accepts(tmp_path, monkeypatch):
    """`eval --model smollm2-135m` is the directory `train --model smollm2-135m` starts from (converted into the
    trainer's cache on first use), and it is a chat model."""
    from transformers import AutoTokenizer

    from dhpo_suite.eval.cli import _targets
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded.config import TrainConfig
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    monkeypatch.setenv("DHPO_SUITE_CACHE", str(tmp_path / "cache"))
    [(label, model_dir, results)] = _targets(Path("smollm2-135m"), None, "all", None)
    cfg = TrainConfig(model="smollm2-135m")
    with GraderPool(workers=1) as pool:
        trained = resolve_model_dir(cfg, get_task(cfg.task), sft_accuracy_fn(cfg, get_task(cfg.task), pool), print)
    assert Path(model_dir) == trained and Path(model_dir).is_relative_to(tmp_path / "cache")
    assert is_chat_model(model_dir, AutoTokenizer.from_pretrained(model_dir))


def test_a_missing_model_names_the_accepted_names(tmp_path):
    res = CliRunner().invoke(app, ["eval", "--bench", "arith", "--model", str(tmp_path / "nope")])
    assert res.exit_code == 2
    assert "not a directory (a Hugging Face model directory; or a name train accepts: tiny, smollm2-135m)" in \
        res.stderr
