"""Data fidelity: the hub path gives SimpleRL's problems and golds, checked on the shipped copies.

No hub here, so each shipped row is turned back into the row its hub dataset holds (the source columns the
shipped README documents per file: which field is the id, the problem, the raw answer) and pushed through the
registry's hub normalisation; the result must be the shipped row's problem, id and golds (answer_alt
included). The AIME25 rows get back the control characters `math-ai/aime25` has where `\\frac`/`\\triangle`
were (README, "AIME25 text repair").
"""

import json
import tracemalloc

import pytest

from dhpo_suite.eval.benchmarks import BENCHMARKS, PAPER_BENCHMARKS, load_problems
from dhpo_suite.eval.sources import (_check_row, clip, derive_answer_alt, normalize_row, read_jsonl,
                                     repair_escapes)


def _damage(text: str) -> str:
    """What a JSON decoder made of `\\frac`/`\\triangle` in math-ai/aime25: a form feed / a tab."""
    return text.replace("\\frac", "\x0crac").replace("\\triangle", "\triangle")


def _hub_row(name: str, row: dict) -> dict:
    """The hub dataset's row for one shipped row (source columns from the shipped README's field table)."""
    return {
        "aime24": lambda r: {"id": int(r["id"]), "problem": r["problem"], "answer": r["answer_raw"],
                             "solution": r["solution"], "url": r["url"]},
        "aime25": lambda r: {"problem": _damage(r["problem"]) if r.get("text_repair") else r["problem"],
                             "answer": r["answer_raw"]},
        "amc23": lambda r: {"id": int(r["id"]), "question": r["problem"], "answer": r["answer_raw"]},
        "olympiadbench": lambda r: {"id": int(r["id"]), "question": r["problem"], "final_answer": r["final_answer"]},
        "math500": lambda r: {"unique_id": r["unique_id"], "problem": r["problem"], "answer": r["answer"]},
        "minerva_math": lambda r: {"question": r["problem"], "answer": r["answer"]},
        "gsm8k": lambda r: {"question": r["problem"], "answer": r["solution"]},
    }[name](row)


@pytest.mark.parametrize("name", PAPER_BENCHMARKS)
def test_hub_rows_normalise_to_the_shipped_problems_and_golds(name, bench_dir):
    rows = [json.loads(line) for line in (bench_dir / f"{name}.jsonl").read_text().splitlines()]
    assert len(rows) == BENCHMARKS[name].rows  # the registry's expected count is SimpleRL's
    shipped = load_problems(name, bench_dir)
    from_hub = [_check_row(normalize_row(BENCHMARKS[name], _hub_row(name, r), i), f"row {i}")
                for i, r in enumerate(rows)]
    assert [(p.id, p.problem, p.gold) for p in from_hub] == [(p.id, p.problem, p.gold) for p in shipped]


def test_aime25_repair_restores_the_three_damaged_rows(bench_dir):
    rows = [json.loads(line) for line in (bench_dir / "aime25.jsonl").read_text().splitlines()]
    damaged = [r for r in rows if r.get("text_repair")]
    assert [r["id"] for r in damaged] == ["18", "19", "27"]  # README: rows 18 and 27 (\frac), 19 (\triangle)
    for r in damaged:
        assert _damage(r["problem"]) != r["problem"] and repair_escapes(_damage(r["problem"])) == r["problem"]


@pytest.mark.parametrize("name", PAPER_BENCHMARKS)
def test_repair_never_touches_clean_text(name, bench_dir):
    """No shipped problem changes (minerva_math row 116 keeps its newline + "u_{S}"); real tabs stay tabs."""
    for p in load_problems(name, bench_dir):
        assert repair_escapes(p.problem) == p.problem
    assert repair_escapes("a\tFind x\tand \times") == "a\tFind x\tand \\times"


def test_answer_alt_rules_reproduce_every_shipped_answer_alt(bench_dir):
    """All 64 shipped answer_alt values (62 Minerva, 2 OlympiadBench) and no other row get one."""
    count = 0
    for name in PAPER_BENCHMARKS:
        for line in (bench_dir / f"{name}.jsonl").read_text().splitlines():
            row = json.loads(line)
            assert derive_answer_alt(row["answer"]) == row.get("answer_alt", []), (name, row["id"])
            count += bool(row.get("answer_alt"))
    assert count == 64


def test_hub_loader_reads_a_dataset_through_datasets_and_reports_a_short_split(tmp_path, monkeypatch):
    """The real `datasets.load_dataset` path, on a local folder standing in for the hub (no network here)."""
    from dataclasses import replace

    rows = [{"question": f"Q{i}\x0crac{{1}}{{2}}", "answer": f"work\n#### 1,00{i}"} for i in range(3)]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setitem(BENCHMARKS, "gsm8k", replace(BENCHMARKS["gsm8k"], hub_id=str(tmp_path), config=None))
    monkeypatch.delenv("DHPO_BENCHMARKS_DIR", raising=False)
    notes = []
    problems = load_problems("gsm8k", notify=notes.append)
    assert [(p.id, p.problem, p.gold) for p in problems] == \
        [(str(i), f"Q{i}\\frac{{1}}{{2}}", (f"100{i}",)) for i in range(3)]
    assert notes == ["gsm8k: the hub split has 3 rows, SimpleRL's file 1319; for the paper's exact set use "
                     "--data-dir with the shipped files"]


def test_an_oversize_row_is_skipped_while_reading_with_bounded_memory(tmp_path):
    path = tmp_path / "aime24.jsonl"
    huge = 20 * 2**20  # 20 MiB of problem text
    with open(path, "w") as f:
        f.write(json.dumps({"id": "a", "problem": "P", "answer": "1"}) + "\n")
        f.write('{"id": "big", "problem": "')
        for _ in range(huge // 2**16):
            f.write("x" * 2**16)
        f.write('", "answer": "2"}\n')
        f.write(json.dumps({"id": "c", "problem": "Q", "answer": "3"}) + "\n")
    tracemalloc.start()
    problems = read_jsonl(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * 2**20, f"peak {peak / 2**20:.1f} MiB while reading a 20 MiB row"
    assert [(p.id, p.skip is None) for p in problems] == [("a", True), ("big", False), ("c", True)]
    assert "aime24.jsonl:2: row larger than 1048576 bytes" in problems[1].skip and len(problems[1].skip) < 200


def test_clip_keeps_messages_to_one_short_line():
    text = "line one\n" + "y" * 5000
    assert len(clip(text)) <= 200 and "\n" not in clip(text) and "(5009 characters)" in clip(text)
    assert clip("short") == "short"
