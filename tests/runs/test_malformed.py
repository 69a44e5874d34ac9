"""Malformed or truncated files: a clear error naming the file; bulk readers skip only what is broken."""

from __future__ import annotations

import json
import warnings

import pytest

from dhpo_suite.runs import RunFormatError, RunReader, RunWriter, list_runs
from dhpo_suite.testing.synthetic_runs import synthetic_manifest, synthetic_record


@pytest.fixture
def run(tmp_path):
    """Steps 1-4 compacted into scalars.parquet, steps 5-6 as per-step files."""
    path = tmp_path / "run"
    w = RunWriter(path, synthetic_manifest("dhpo-e"), compact_every=4, fsync=False)
    for s in range(1, 7):
        w.write_step(synthetic_record(s, "dhpo-e", s, max_len=32, prompts=2, group_size=4))
    yield path
    with warnings.catch_warnings():  # the test may have broken files the final compaction meets
        warnings.simplefilter("ignore")
        w.close()


def truncate(path, keep=0.5):
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


def test_truncated_step_scalars_skip_only_that_step(run):
    bad = run / "scalars" / "step-000005.parquet"
    truncate(bad)
    r = RunReader(run)
    assert r.steps() == [1, 2, 3, 4, 6]
    assert len(r.problems) == 1 and r.problems[0].path == bad and "Parquet" in r.problems[0].reason
    assert str(bad) in str(r.problems[0])


def test_corrupt_compacted_scalars_keep_the_rest(run):
    bad = run / "scalars" / "scalars.parquet"
    bad.write_bytes(b"not parquet at all")
    r = RunReader(run)
    assert r.steps() == [5, 6] and [p.path for p in r.problems] == [bad]
    # The next compaction sets the broken file aside (never overwrites it) and the reader keeps saying so.
    with pytest.warns(UserWarning, match="moved to scalars.parquet.corrupt-"):
        RunWriter(run, synthetic_manifest("dhpo-e"), resume=True).close()
    r = RunReader(run)
    assert r.steps() == [5, 6] and "set aside" in r.problems[0].reason


def test_scalars_file_without_a_step_column(run):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = run / "scalars" / "step-000006.parquet"
    pq.write_table(pa.table({"reward/mean": [1.0]}), bad)
    r = RunReader(run)
    assert r.steps() == [1, 2, 3, 4, 5] and "step" in r.problems[0].reason and r.problems[0].path == bad


@pytest.mark.parametrize("kind", ["distributions", "outliers", "samples"])
def test_truncated_step_file_raises_naming_it(run, kind):
    bad = run / kind / "step-000002.parquet"
    truncate(bad, 0.7)
    r = RunReader(run)
    loader = {"distributions": lambda: r.distributions(2, "entropy"), "outliers": lambda: r.outliers(2),
              "samples": lambda: r.samples(2)}[kind]
    with pytest.raises(RunFormatError, match="step-000002.parquet") as e:
        loader()
    assert e.value.path == bad
    r.outliers(3), r.samples(3), r.distributions(3, "entropy")  # neighbours are fine


def test_distribution_series_skips_and_reports_broken_steps(run):
    bad = run / "distributions" / "step-000003.parquet"
    bad.write_bytes(b"garbage")
    r = RunReader(run)
    series = r.distributions(None, "entropy")
    assert sorted(series) == [1, 2, 4, 5, 6]
    assert [p.path for p in r.problems] == [bad]
    with pytest.raises(RunFormatError, match="no distribution named 'nope'"):
        r.distributions(1, "nope")


def test_wrong_schema_is_named(run):
    import pyarrow as pa
    import pyarrow.parquet as pq

    bad = run / "outliers" / "step-000001.parquet"
    pq.write_table(pa.table({"step": [1]}), bad)
    with pytest.raises(RunFormatError, match="missing columns") as e:
        RunReader(run).outliers(1)
    assert e.value.path == bad


def test_manifest_errors_name_file_line_and_field(run):
    m = run / "manifest.json"
    good = json.loads(m.read_text())
    m.write_text(m.read_text()[:-20])
    with pytest.raises(RunFormatError, match=r"manifest.json: malformed JSON at line \d+"):
        RunReader(run)
    m.write_text(json.dumps({**good, "status": "exploded"}))
    with pytest.raises(RunFormatError, match="'status'"):
        RunReader(run)
    m.write_text(json.dumps({**good, "format_version": 99}))
    with pytest.raises(RunFormatError, match="newer"):
        RunReader(run)
    m.write_text(json.dumps({k: v for k, v in good.items() if k != "algorithm"}))
    with pytest.raises(RunFormatError, match="'algorithm'"):
        RunReader(run)
    runs = list_runs(run.parent)
    assert runs[0].status == "invalid" and "algorithm" in runs[0].problem


def test_bad_columns_and_counts_are_named(run):
    import pyarrow as pa
    import pyarrow.parquet as pq

    # A scalars file whose metric is text: skipped and reported, the rest reads.
    pq.write_table(pa.table({"step": [6], "reward/mean": ["high"]}), run / "scalars" / "step-000006.parquet")
    r = RunReader(run)
    assert r.steps() == [1, 2, 3, 4, 5] and "non-numeric" in r.problems[0].reason
    # Asking for a column some steps lack is not an error (absent = not measured).
    assert list(r.scalars(columns=["not/a/metric"]).columns) == ["step"]
    # A histogram whose counts do not fit its edges.
    path = run / "distributions" / "step-000002.parquet"
    t = pq.read_table(path).to_pylist()
    t[0]["counts"] = t[0]["counts"][:-1]
    pq.write_table(pa.Table.from_pylist(t, schema=pq.read_schema(path)), path)
    with pytest.raises(RunFormatError, match="step-000002.parquet: .*does not match"):
        r.step_distributions(2)


def test_extra_columns_from_a_newer_writer_are_ignored(run):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = run / "outliers" / "step-000003.parquet"
    t = pq.read_table(path)
    pq.write_table(t.append_column("future_field", pa.array([1] * t.num_rows)), path)
    assert list(RunReader(run).outliers(3).columns) == t.column_names


def test_json_nesting_is_bounded_before_parsing(tmp_path):
    """Issue 29: a manifest of 100,000 nested arrays ended in a bare RecursionError. The reader counts the depth
    first: MAX_DEPTH levels parse, one more is refused naming the file; brackets inside strings do not count."""
    from dhpo_suite.runs.format import RunFormatError
    from dhpo_suite.runs.json_text import MAX_DEPTH, loads_bounded

    ok = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads_bounded(ok, "f.json") == eval(ok)  # noqa: S307 - a literal of brackets only
    with pytest.raises(RunFormatError, match=r"f.json: nested 65 levels deep; at most 64"):
        loads_bounded("[" + ok + "]", "f.json")
    assert loads_bounded('{"a": "[[[[' + "[" * 100 + '\\" {"}', "f.json") == {"a": "[[[[" + "[" * 100 + '" {'}
    with pytest.raises(RunFormatError, match="nested 100000 levels"):
        loads_bounded("[" * 100_000 + "]" * 100_000, "f.json")
    with pytest.raises(RunFormatError, match="malformed JSON at line 1, column 2"):
        loads_bounded("{", "f.json")
