"""The diagnostic task `arithmetic-chain` (issue 26 item 3): 6-operation chains with every intermediate result.

What the setting needs of it, checked from outside the generator: each reference line is true arithmetic and
feeds the next (six results a response must get right), the answer is the chain's value and the real grader
accepts the reference, 512 held-out problems exist and never occur in training, and the reference response is
about 60 tokens of the tiny model's tokenizer (the length the update-distance probe needs), within the budget.
"""

from __future__ import annotations

import re

import pytest

from dhpo_suite.tasks import get_task

LINE = re.compile(r"^(-?\d+) ([+-]) (\d+) = (-?\d+)$")


@pytest.fixture(scope="module")
def task():
    return get_task("arithmetic-chain")


def test_every_line_is_true_and_feeds_the_next(task):
    for p in task.make_problems(300, seed=5, split="train"):
        *lines, boxed = p["solution"].split("\n")
        assert len(lines) == 6, p
        operands = [int(x) for x in re.findall(r"\d+", p["problem"])]
        value = operands[0]
        for line, b in zip(lines, operands[1:]):
            a, op, b_line, c = LINE.match(line).groups()
            assert int(a) == value and int(b_line) == b and 1 <= b <= 9
            value = value + b if op == "+" else value - b
            assert int(c) == value, line
        assert boxed == f"\\boxed{{{value}}}" and p["answer"] == str(value)


def test_the_grader_accepts_the_reference_and_refuses_one_wrong_step(task):
    from dhpo_suite.grading import grade

    p = task.make_problems(1, seed=0, split="test")[0]
    assert grade(p["solution"], p["answer"], task.bench).correct
    wrong = p["solution"].replace(f"\\boxed{{{p['answer']}}}", f"\\boxed{{{int(p['answer']) + 1}}}")
    assert not grade(wrong, p["answer"], task.bench).correct


def test_512_heldout_problems_disjoint_from_training(task):
    test = task.make_problems(512, seed=0, split="test")
    train = task.make_problems(1000, seed=0, split="train")
    assert len({p["problem"] for p in test}) == 512
    assert not {p["problem"] for p in test} & {p["problem"] for p in train}
    assert task.make_problems(512, seed=0, split="test") == test  # deterministic for (seed, split)
    assert task.make_problems(512, seed=1, split="test") != test


def test_reference_response_is_about_60_tokens_within_budget(task):
    from dhpo_suite.models.tiny import build_tokenizer

    tok = build_tokenizer(0)
    lengths = [len(tok(p["solution"] + tok.eos_token, add_special_tokens=False)["input_ids"])
               for p in task.make_problems(200, seed=2, split="train")]
    mean = sum(lengths) / len(lengths)
    assert 50 <= mean <= 70, mean
    assert max(lengths) < task.max_new_tokens  # room for a wrong, longer answer before truncation
