"""The results writer/reader: fsync'd appends, torn last lines, malformed lines, atomic summaries."""

import json

import pytest

from dhpo_suite.runs import eval_results as er
from dhpo_suite.runs.format import RunFormatError


def _r(i):
    return {"bench": "b", "problem_id": str(i), "sample": 0, "response": "x" * i}


def test_append_read_roundtrip(tmp_path):
    path = er.samples_path(tmp_path, "b")
    with er.SampleWriter(path) as w:
        assert w.write_batch([_r(1), _r(2)]) == 2
        w.write_batch([_r(3)])
    got = er.read_samples(path)
    assert [r["problem_id"] for r in got.records] == ["1", "2", "3"] and not got.skipped


def test_torn_last_line_is_skipped_reported_and_cut_before_appending(tmp_path):
    path = er.samples_path(tmp_path, "b")
    with er.SampleWriter(path) as w:
        w.write_batch([_r(1), _r(2)])
    with open(path, "a") as f:
        f.write(json.dumps(_r(3))[:15])  # a SIGKILL mid-write
    got = er.read_samples(path)
    assert len(got.records) == 2
    assert len(got.skipped) == 1 and "line 3" in str(got.skipped[0]) and "torn" in str(got.skipped[0])
    with er.SampleWriter(path) as w:
        w.write_batch([_r(4)])
    got = er.read_samples(path)
    assert [r["problem_id"] for r in got.records] == ["1", "2", "4"] and not got.skipped


def test_complete_record_without_newline_is_not_trusted(tmp_path):
    path = tmp_path / "b.samples.jsonl"
    path.write_text(json.dumps(_r(1)) + "\n" + json.dumps(_r(2)))
    got = er.read_samples(path)
    assert len(got.records) == 1 and got.skipped


def test_malformed_middle_line_names_file_and_line(tmp_path):
    path = tmp_path / "b.samples.jsonl"
    path.write_text(json.dumps(_r(1)) + "\n{oops\n" + json.dumps(_r(2)) + "\n")
    with pytest.raises(RunFormatError, match=r"b\.samples\.jsonl: line 2: malformed"):
        er.read_samples(path)


def test_atomic_json_and_rewrite(tmp_path):
    er.write_json_atomic(tmp_path / "summary.json", {"AVG": 0.5})
    assert er.read_json(tmp_path / "summary.json") == {"AVG": 0.5}
    assert not list(tmp_path.glob(".*tmp*"))
    path = er.samples_path(tmp_path, "b")
    er.rewrite_samples(path, [_r(7)])
    assert er.read_samples(path).records == [_r(7)]
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RunFormatError, match="bad.json: malformed JSON at line 1"):
        er.read_json(tmp_path / "bad.json")


def test_checkpoint_eval_dirs(tmp_path):
    d = er.checkpoint_eval_dir(tmp_path, 40)
    assert d == tmp_path / "evals" / "step-000040"
    er.write_json_atomic(d / er.SUMMARY, {})
    (tmp_path / "evals" / "step-000050").mkdir()  # no summary yet: not listed
    assert er.list_checkpoint_evals(tmp_path) == {40: d}
