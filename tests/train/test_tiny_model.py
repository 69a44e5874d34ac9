"""The tiny model and the arithmetic task: loadable, deterministic, disjoint splits."""

from __future__ import annotations

import json

import pytest

from dhpo_suite.tasks import arithmetic


def test_tiny_model_loads_and_round_trips(tiny_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    config = json.loads((tiny_model_dir / "config.json").read_text())
    assert config["model_type"] == "qwen3" and config["head_dim"] >= 32
    assert sum(p.numel() for p in model.parameters()) < 5_000_000
    assert tok.eos_token == "<|im_end|>" and tok.eos_token_id == model.config.eos_token_id
    prob = arithmetic.make_problems(1, seed=3)[0]
    text = tok.apply_chat_template([{"role": "user", "content": prob["problem"]}], tokenize=False,
                                   add_generation_prompt=True)
    assert text == f"<|im_start|>user\n{prob['problem']}<|im_end|>\n<|im_start|>assistant\n"
    for s in (prob["solution"], "héllo ∑ wörld 12+3"):
        assert tok.decode(tok(s)["input_ids"]) == s
    digits = [tok.decode([i]) for i in tok("12345")["input_ids"]]
    assert digits == list("12345")  # one token per digit


def test_tiny_model_build_is_deterministic(tiny_model_dir, tmp_path):
    from dhpo_suite.models.tiny import build_tiny_model

    again = build_tiny_model(tmp_path / "again", seed=0)
    for name in ("model.safetensors", "tokenizer.json"):
        assert (again / name).read_bytes() == (tiny_model_dir / name).read_bytes()


def test_problems_are_seeded_disjoint_and_correct():
    train = arithmetic.make_problems(500, seed=1, split="train", level=2, n_ops=3)
    test = arithmetic.make_problems(500, seed=1, split="test", level=2, n_ops=3)
    assert train == arithmetic.make_problems(500, seed=1, split="train", level=2, n_ops=3)
    assert train != arithmetic.make_problems(500, seed=2, split="train", level=2, n_ops=3)
    assert not {p["problem"] for p in train} & {p["problem"] for p in test}
    assert not {p["problem"] for p in train} & {p["problem"] for p in
                                                 arithmetic.make_problems(500, seed=9, split="test", level=2, n_ops=3)}
    for p in train[:100]:
        expr = p["problem"].removeprefix("Compute ").removesuffix(".")
        assert str(eval(expr)) == p["answer"]  # noqa: S307 (our own generated integer expressions)
        assert p["solution"].endswith(f"\\boxed{{{p['answer']}}}")
    assert len({p["id"] for p in train}) == 500


@pytest.mark.parametrize("kwargs", [dict(split="dev"), dict(n_ops=0), dict(n=-1)])
def test_problem_options_are_validated(kwargs):
    args = dict(n=3, seed=0, split="train") | kwargs
    with pytest.raises(ValueError):
        arithmetic.make_problems(**args)


def test_question_problems_enumerate_disjoint_splits_with_correct_answers():
    train = arithmetic.question_problems(1000, seed=0, split="train")
    test = arithmetic.question_problems(1000, seed=0, split="test")
    assert len(train) + len(test) == 15 * 9 + sum(1 for a in range(1, 16) for b in range(1, 10) if a >= b)
    assert not {p["problem"] for p in train} & {p["problem"] for p in test}
    assert arithmetic.question_problems(5, seed=0, split="test") == test[:5]
    assert arithmetic.question_problems(5, seed=1, split="test") != test[:5]  # seed shuffles the order
    for p in train + test:
        expr = p["problem"].removeprefix("What is ").removesuffix("?")
        assert str(eval(expr)) == p["answer"] and int(p["answer"]) >= 0  # noqa: S307 (our own expressions)
        assert p["solution"].endswith(f"\\boxed{{{p['answer']}}}")
    with pytest.raises(ValueError, match="split"):
        arithmetic.question_problems(3, split="dev")
