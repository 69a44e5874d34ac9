"""Prompt templates and stop tokens derived from the tokenizer / generation config (never hard-coded)."""

import pytest
from transformers import AutoTokenizer, GenerationConfig

from dhpo_suite.eval.prompts import QWEN_BOXED, TEMPLATES, load_template, stop_token_ids


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_qwen_boxed_is_simplerl_base_template():
    t = load_template("qwen-boxed")
    prompt = t.render("What is 1+1?", tokenizer=None)
    assert prompt == ("<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 1+1?\n"
                      "Please reason step by step, and put your final answer within \\boxed{}.<|im_end|>\n"
                      "<|im_start|>assistant\n")
    assert set(TEMPLATES) == {"qwen-boxed", "chat", "task"}


def test_chat_template_and_file_template(tok, tmp_path):
    chat = load_template("chat").render("Compute 2 + 2.", tok)
    assert chat == ("<|im_start|>user\nCompute 2 + 2.\nPlease reason step by step, and put your final answer "
                    "within \\boxed{}.<|im_end|>\n<|im_start|>assistant\n")
    assert not load_template("chat").adds_special_tokens and load_template("qwen-boxed").adds_special_tokens
    f = tmp_path / "t.txt"
    f.write_text("Q: {input}\nA:")
    assert load_template(str(f)).render("x", tok) == "Q: x\nA:"
    f.write_text("no placeholder")
    with pytest.raises(ValueError, match="t.txt: .*{input}"):
        load_template(str(f))
    with pytest.raises(ValueError, match="neither"):
        load_template("nope")


def test_stop_ids_of_a_qwen3_base_like_model_include_the_chat_end(tok, tmp_path):
    """Qwen3 base: eos and generation_config say <|endoftext|>, yet the model ends ChatML turns with <|im_end|>."""
    tok.eos_token = "<|endoftext|>"
    endoftext, im_end = tok.convert_tokens_to_ids(["<|endoftext|>", "<|im_end|>"])
    gen = GenerationConfig(eos_token_id=endoftext)
    assert stop_token_ids(tok, gen, load_template("qwen-boxed")) == sorted([endoftext, im_end])
    tok.chat_template = None  # the raw template alone still reveals the turn end
    assert stop_token_ids(tok, gen, load_template("qwen-boxed")) == sorted([endoftext, im_end])
    assert stop_token_ids(tok, gen, None) == [endoftext]  # nothing else claims to end a turn


@pytest.mark.parametrize("task", ["arithmetic", "word-problems"])
def test_task_template_is_the_trainers_prompt(tiny_model_dir, task):
    """The trainer's rollout prompt (dhpo_suite.train.embedded.rollout.encode_prompts): Task.messages through the
    chat template, no added specials; it stops at the tokenizer's eos alone."""
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded.rollout import encode_prompts

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)  # the module's `tok` is changed by the tests above
    t = get_task(task)
    problem = t.make_problems(1, seed=0, split="test")[0]
    text = load_template("task").render(problem["problem"], tok, task)
    assert tok(text, add_special_tokens=False)["input_ids"] == encode_prompts(tok, [t.messages(problem)])[0]
    assert stop_token_ids(tok, GenerationConfig(eos_token_id=[0, 2]), load_template("task")) == [tok.eos_token_id]
    with pytest.raises(ValueError, match="only a training task"):
        load_template("task").render("x", tok)


def test_stop_ids_take_every_generation_config_eos(tok):
    gen = GenerationConfig(eos_token_id=[0, 2])
    assert stop_token_ids(tok, gen) == [0, 2]
    assert QWEN_BOXED.count("{input}") == 1
