"""`dhpo-suite grade FILE.jsonl` end to end, and its errors on bad input."""

from __future__ import annotations

import json
import os

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
    # which rule gave each answer (issue 40); a timed-out item keeps the rule its worker reported
    assert [g["answer_rule"] for g in graded] == ["box", "answer line", "box", None, "box"]
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


def test_grade_cli_odd_unicode_and_invalid_utf8_each_get_a_verdict(tmp_path):
    """Lone surrogates, NUL, bidi marks and bytes that are not UTF-8: every row is graded and written."""
    lines = [
        json.dumps({"id": "surrogate", "response": "\\boxed{7} \udcff", "answer": "7"}),
        json.dumps({"id": "nul", "response": "\x00 so \\boxed{3}\x00", "answer": "3"}),
        json.dumps({"id": "bidi", "response": "\u202e\\boxed{12}\u202c \u200f", "answer": "12"}),
        json.dumps({"id": "gold-surrogate", "response": "\\boxed{5}", "answer": "5\ud800"}),
        json.dumps({"id": "only-surrogates", "response": "\udcff\ud800", "answer": "1"}),
    ]
    bad_utf8 = b'{"id": "bad-utf8", "response": "\\\\boxed{9} \xff\xfe", "answer": "9"}\n'
    raw = "\n".join(lines).encode("utf-8") + b"\n" + bad_utf8
    src = tmp_path / "odd.jsonl"
    src.write_bytes(raw)
    out = _grade(src, "--workers", "1")
    assert out.exit_code == 0, out.stderr_text
    graded = [json.loads(line) for line in (tmp_path / "odd.graded.jsonl").open(encoding="utf-8")]
    assert [g["id"] for g in graded] == ["surrogate", "nul", "bidi", "gold-surrogate", "only-surrogates",
                                        "bad-utf8"]
    assert all(g["grader_status"] in ("ok", "no_answer") and g["grader_reason"] for g in graded)
    assert [g["correct"] for g in graded] == [True, True, True, False, False, True]
    assert graded[0]["response"].endswith("\udcff")  # the input string is kept, escaped as \udcff
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize(("content", "line"), [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", 1),
    ('{"response": "1", "answer": "1"}\n'.encode() + "\u00e9t\u00e9".encode("utf-16"), 2),
])
def test_grade_cli_not_jsonl_is_one_error_naming_file_and_line(tmp_path, content, line):
    src = tmp_path / "bin.jsonl"
    src.write_bytes(content)
    out = _grade(src)
    assert out.exit_code == 2
    assert f"bin.jsonl:{line}: invalid JSON" in out.stderr_text
    assert "Traceback" not in out.stderr_text + out.stdout_text


def test_a_5000_digit_integer_is_graded_not_a_traceback(tmp_path):
    """Issue 29: Python refuses int() of more than 4,300 digits; a JSON answer of 5,000 digits is read and
    compared digit by digit, in both directions."""
    n = "7" * 5000
    src = tmp_path / "big.jsonl"
    src.write_text(f'{{"response": "so $\\\\boxed{{{n}}}$", "answer": {n}}}\n'
                   f'{{"response": "so $\\\\boxed{{{n[:-1]}8}}$", "answer": {n}}}\n')
    out = _grade(src)
    assert out.exit_code == 0, out.stderr_text
    graded = [json.loads(line) for line in (tmp_path / "big.graded.jsonl").open()]
    assert [g["correct"] for g in graded] == [True, False]
    assert "5000-digit integers" in graded[0]["grader_reason"]


def test_truncated_rows_are_graded_only_on_a_committed_answer(tmp_path):
    """A row stopped at the token budget (`finish_reason: length`) gets no fallback answer; its box counts."""
    rows = [{"response": "so the total is 42.", "answer": "42", "finish_reason": "length"},
            {"response": "so the total is 42.", "answer": "42"},
            {"response": "so $\\boxed{42}$ and then we", "answer": "42", "truncated": True}]
    out = _grade(_write(tmp_path / "t.jsonl", rows))
    assert out.exit_code == 0, out.stderr_text
    graded = [json.loads(line) for line in (tmp_path / "t.graded.jsonl").open()]
    assert [g["correct"] for g in graded] == [False, True, True]
    assert "token budget" in graded[0]["grader_reason"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_out_into_a_read_only_directory_is_refused_before_grading(tmp_path):
    src = _write(tmp_path / "r.jsonl", [{"response": "\\boxed{1}", "answer": "1"}])
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    out = _grade(src, "--out", locked / "g.jsonl")
    assert out.exit_code == 2 and out.stderr_text.startswith("error: --out: cannot write")
