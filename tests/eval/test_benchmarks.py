"""The benchmark registry: every record loads, hub rows normalise, bad files fail naming file/line/field."""

import json

import pytest

from dhpo_suite.eval.benchmarks import (BENCHMARKS, PAPER_BENCHMARKS, DataError, load_problems, normalize_row,
                                        read_jsonl, resolve_benches)

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


def test_protocol_defaults_and_arith():
    assert BENCHMARKS["aime24"].samples == BENCHMARKS["aime25"].samples == 32
    assert BENCHMARKS["amc23"].samples == 4
    assert {BENCHMARKS[n].samples for n in PAPER_BENCHMARKS[3:]} == {1}
    arith = load_problems("arith", limit=5)
    assert len(arith) == 5 and all(p.gold[0].lstrip("-").isdigit() for p in arith)


def test_answer_alt_becomes_an_accepted_gold(bench_dir):
    minerva = {p.id: p for p in load_problems("minerva_math", bench_dir)}
    assert any(len(p.gold) == 2 for p in minerva.values())


def test_resolve_benches():
    assert resolve_benches("all") == list(PAPER_BENCHMARKS)
    assert resolve_benches("aime24, arith") == ["aime24", "arith"]
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


def test_hub_loader_reads_a_dataset_through_datasets(tmp_path):
    """The real `datasets.load_dataset` path, on a local folder standing in for the hub (no network here)."""
    from dataclasses import replace

    from dhpo_suite.eval.benchmarks import _from_hub

    rows = [{"question": f"Q{i}", "answer": f"work\n#### 1,00{i}"} for i in range(3)]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    bench = replace(BENCHMARKS["gsm8k"], hub_id=str(tmp_path), config=None, split="test")
    problems = _from_hub(bench)
    assert [(p.id, p.problem, p.gold) for p in problems] == [(str(i), f"Q{i}", (f"100{i}",)) for i in range(3)]


@pytest.mark.parametrize("name", list(BENCHMARKS))
def test_every_benchmark_is_documented_with_its_source(name):
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "eval.md").read_text()
    b = BENCHMARKS[name]
    assert f"| {name} | `{b.hub_id}" in doc
    if b.config:
        assert f"`{b.config}` / {b.split}" in doc
