"""The one JSONL reader behind benchmark files, `data prepare` inputs and `grade` inputs."""

import pytest

from dhpo_suite.eval.benchmarks import DataError as BenchError
from dhpo_suite.eval.benchmarks import read_jsonl
from dhpo_suite.grading.cli import RowError
from dhpo_suite.grading.cli import read_rows as grade_rows
from dhpo_suite.jsonl import iter_jsonl
from dhpo_suite.train.verl_backend.data import DataError as TrainDataError
from dhpo_suite.train.verl_backend.data import read_rows as train_rows


def test_rows_keep_their_line_numbers_across_blank_lines(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\n\n   \n{"a": 2}\n', encoding="utf-8")
    assert list(iter_jsonl(path)) == [(1, {"a": 1}), (4, {"a": 2})]


@pytest.mark.parametrize(("line", "message"), [
    ('{"a": 1', r"x\.jsonl:3: invalid JSON \(Expecting ',' delimiter at column 8\)"),
    ("[1, 2]", r"x\.jsonl:3: expected a JSON object, got list"),
])
def test_every_reader_names_file_and_line_with_its_own_error(tmp_path, line, message):
    path = tmp_path / "x.jsonl"
    good = ('{"id": "1", "problem": "P", "answer": "5", "response": "5"}\n'
            '{"id": "2", "problem": "Q", "answer": "6", "response": "6"}\n')
    path.write_text(good + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        list(iter_jsonl(path))
    with pytest.raises(BenchError, match=message):
        read_jsonl(path)
    with pytest.raises(TrainDataError, match=message):
        list(train_rows(path))
    with pytest.raises(RowError, match=message):
        grade_rows(path)
