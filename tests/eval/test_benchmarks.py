"""The benchmark registry: every record loads, hub rows normalise, bad files fail naming file/line/field."""

import json

import pytest

from dhpo_suite.eval.benchmarks import (BENCHMARKS, PAPER_BENCHMARKS, DataError, load_problems, normalize_row,
                                        read_jsonl, resolve_benches)
from dhpo_suite.tasks import TASKS

# What a hub row of each benchmark looks like (its source columns) and the gold it must give.
HUB_ROWS = {
    "aime24": ({"id": 60, "problem": "P", "answer": "025"}, "60", "25"),
    "aime25": ({"problem": "P", "answer": "70"}, "3", "70"),
    "amc23": ({"id": 0, "question": "P", "answer": 27.0}, "0", "27"),
    "olympiadbench": ({"id": 1606, "question": "P", "final_answer": ["$69$,$84$"]}, "1606", "69,84"),
    "math500": ({"unique_id": "test/x/1.json", "problem": "P", "answer": "\\frac{1}{2}"}, "test/x/1.json",
                "\\frac{1}{2}"),
    "minerva_math": ({"question": "P", "answer": "4.5e33"}, "3", "4.5e33"),
    "gsm8k": ({"question": "P", "answer": "so 2,125 in all\n#### 2,125"}, "3", "2125"),
}


@pytest.mark.parametrize("name", PAPER_BENCHMARKS)
def test_every_paper_benchmark_loads_from_the_shipped_files(name, bench_dir):
    problems = load_problems(name, bench_dir, limit=3)
    assert len(problems) == 3
    assert all(p.id and p.problem and p.gold[0] for p in problems)
    assert len({p.id for p in load_problems(name, bench_dir)}) == len(load_problems(name, bench_dir))


@pytest.mark.parametrize("name", PAPER_BENCHMARKS)
def test_hub_rows_normalise_through_the_record(name):
    row, want_id, want_answer = HUB_ROWS[name]
    out = normalize_row(BENCHMARKS[name], row, index=3)
    assert (out["id"], out["problem"], out["answer"]) == (want_id, "P", want_answer)


def test_protocol_defaults():
    assert BENCHMARKS["aime24"].samples == BENCHMARKS["aime25"].samples == 32
    assert BENCHMARKS["amc23"].samples == 4
    assert {BENCHMARKS[n].samples for n in PAPER_BENCHMARKS[3:]} == {1}
    assert {BENCHMARKS[n].max_new_tokens for n in PAPER_BENCHMARKS} == {16384}  # the paper's 16K budget


@pytest.mark.parametrize("name", list(TASKS))
def test_every_training_task_is_a_benchmark_with_the_trainers_held_out_set(name):
    """The trainer's held-out reward: task.make_problems(eval_prompts=128, seed, "test"), its budget, its policy."""
    from dhpo_suite.train.embedded import TrainConfig

    task, bench = TASKS[name], BENCHMARKS[name]
    assert (bench.task, bench.template, bench.max_new_tokens, bench.grader, bench.samples) == \
        (name, "task", task.max_new_tokens, task.bench, 1)
    for seed in (0, 3):
        want = task.make_problems(TrainConfig().eval_prompts, seed=seed, split="test")
        got = load_problems(name, seed=seed)
        assert [(p.id, p.problem, p.gold) for p in got] == [(r["id"], r["problem"], (r["answer"],)) for r in want]
    assert len(load_problems(name, limit=5)) == min(5, len(want))


def test_answer_alt_becomes_an_accepted_gold(bench_dir):
    minerva = {p.id: p for p in load_problems("minerva_math", bench_dir)}
    assert any(len(p.gold) == 2 for p in minerva.values())


def test_resolve_benches():
    assert resolve_benches("all") == list(PAPER_BENCHMARKS)
    assert resolve_benches("aime24, arith") == ["aime24", "arithmetic"]  # the old name is an alias
    assert resolve_benches("arithmetic-chat,gsm8k") == ["arithmetic-chat", "gsm8k"]
    with pytest.raises(DataError, match="unknown benchmark.*'aime23'"):
        resolve_benches("aime23")


@pytest.mark.parametrize("line, message", [
    ('{"id": "1", "problem": "P"}', r"bad\.jsonl:2: field 'answer': missing"),
    ('{"id": "1", "problem": "P", "answer": 5}', r"bad\.jsonl:2: field 'answer': expected a non-empty string"),
    ('{"id": "1", "problem": "", "answer": "5"}', r"bad\.jsonl:2: field 'problem'"),
    ('{"id": "1", "problem": "P", "answer": "5", "answer_alt": [1]}', r"bad\.jsonl:2: field 'answer_alt'"),
    ('{"id": "0", "problem": "P", "answer": "5"}', r"bad\.jsonl:2: field 'id': duplicate '0' \(first on line 1\)"),
    ('{"id": "1", "problem": "P", "answer": "5"', r"bad\.jsonl:2: invalid JSON"),
    ('[1, 2]', r"bad\.jsonl:2: expected a JSON object"),
])
def test_malformed_data_file_names_file_line_and_field(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "0", "problem": "P", "answer": "1"}) + "\n" + line + "\n")
    with pytest.raises(DataError, match=message):
        read_jsonl(path)


def test_missing_file_in_data_dir(tmp_path):
    with pytest.raises(DataError, match="aime24.jsonl: not found"):
        load_problems("aime24", tmp_path)


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_every_benchmark_is_documented_with_its_source(name):
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "eval.md").read_text()
    b = BENCHMARKS[name]
    assert f"| {name} | `{b.hub_id}" in doc
    if b.config:
        assert f"`{b.config}` / {b.split}" in doc
