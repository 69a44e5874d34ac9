"""`dhpo-suite grade FILE.jsonl` end to end, and its errors on bad input."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app


def _grade(*args):
    """The CLI in-process (CliRunner): the same code path as the console script, no interpreter start."""
    result = CliRunner().invoke(app, ["grade", *map(str, args)])
    result.stdout_text, result.stderr_text = result.stdout, result.stderr
    return result


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_grade_cli_end_to_end(tmp_path):
    rows = [
        {"id": "a", "response": "so $\\boxed{\\frac{1}{2}}$", "answer": "0.5", "bench": "math500"},
        {"id": "b", "response": "the answer is 12", "answer": "13"},
        {"id": "c", "response": "\\boxed{4.5\\times10^{33}}", "answer": "4.5e33",
         "answer_alt": ["4.5 \\times 10^{33}"]},
        {"id": "d", "response": "I give up", "answer": "3"},
        {"id": "e", "response": "\\boxed{10^{10^{10^{10}}}}", "answer": 1},
    ]
    src = _write(tmp_path / "responses.jsonl", rows)
    out = _grade(src, "--timeout", "1.5", "--bench", "gsm8k", "--workers", "2")
    assert out.exit_code == 0, out.stderr_text
    assert "accuracy 0.4000 (2/5); timeouts 1; no answer 1; errors 0" in out.stdout_text
    graded = [json.loads(line) for line in (tmp_path / "responses.graded.jsonl").open()]
    assert [g["id"] for g in graded] == ["a", "b", "c", "d", "e"]
    assert [g["correct"] for g in graded] == [True, False, True, False, False]
    assert [g["grader_status"] for g in graded] == ["ok", "ok", "ok", "no_answer", "timeout"]
    assert graded[0]["extracted"] == "\\frac{1}{2}" and graded[0]["bench"] == "math500"
    assert all(g["grader_reason"] for g in graded)
    assert graded[2]["answer_alt"] == rows[2]["answer_alt"]  # input fields are kept


def test_grade_cli_out_option(tmp_path):
    src = _write(tmp_path / "in.jsonl", [{"response": "\\boxed{7}", "answer": "7"}])
    out = _grade(src, "--out", tmp_path / "graded.jsonl", "--workers", "1")
    assert out.exit_code == 0, out.stderr_text
    assert json.loads((tmp_path / "graded.jsonl").read_text())["correct"] is True


@pytest.mark.parametrize(("lines", "message"), [
    ([{"response": "1", "answer": "1"}, "{not json"], "in.jsonl:2: invalid JSON"),
    ([{"answer": "1"}], "in.jsonl:1: missing field 'response'"),
    ([{"response": "1"}], "in.jsonl:1: missing field 'answer'"),
    ([{"response": 5, "answer": "1"}], "in.jsonl:1: field 'response' must be a string"),
    ([{"response": "1", "answer": None}], "in.jsonl:1: field 'answer' must be a string or a number"),
    ([{"response": "1", "answer": "1", "answer_alt": [1]}], "in.jsonl:1: field 'answer_alt'"),
    (["[1, 2]"], "in.jsonl:1: expected a JSON object"),
    ([], "in.jsonl: no rows"),
])
def test_grade_cli_bad_input(tmp_path, lines, message):
    out = _grade(_write(tmp_path / "in.jsonl", lines))
    assert out.exit_code == 2
    assert message in out.stderr_text
    assert not (tmp_path / "in.graded.jsonl").exists()


def test_grade_cli_missing_file(tmp_path):
    out = _grade(tmp_path / "nope.jsonl")
    assert out.exit_code == 2 and "nope.jsonl: no such file" in out.stderr_text
