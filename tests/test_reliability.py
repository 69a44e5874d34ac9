"""Issue 44, the cases that are not one-line refusals: a checkpoint that cannot be written stops the run cleanly,
and what a command clamps, skips or prints from a run file is said (or escaped) rather than done silently."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from dhpo_suite.cli import app


def _synthetic(path: Path, steps: int = 3) -> Path:
    from dhpo_suite.testing.synthetic_runs import write_synthetic_run

    return write_synthetic_run(path, steps=steps, prompts=2, group_size=2, max_len=8)


def test_a_checkpoint_past_the_file_size_limit_fails_the_run_in_one_line(tiny_model_dir, tmp_path):
    """RLIMIT_FSIZE below the model's size: saving step 1's checkpoint fails (safetensors' own error, not an
    OSError, before issue 44). One line naming the file, exit 2, the manifest says failed, no partial checkpoint
    and no temporary folder left, no "done"."""
    weights = (tiny_model_dir / "model.safetensors").stat().st_size
    limit = weights // 2

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, not a kill
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    run = tmp_path / "run"
    out = subprocess.run(
        [sys.executable, "-m", "dhpo_suite.cli", "train", "--algo", "grpo", "--model", str(tiny_model_dir),
         "--out", str(run), "--steps", "2", "--checkpoint-every", "1", "--prompts-per-step", "2", "-G", "2",
         "--mini-batches", "1", "--train-pool", "4", "--eval-prompts", "1", "--eval-every", "0",
         "--max-new-tokens", "4", "--no-progress"],
        capture_output=True, text=True, timeout=900, preexec_fn=small_files,
        env={**os.environ, "DHPO_SUITE_CACHE": str(tmp_path / "cache")})
    errors = [line for line in out.stderr.splitlines() if line.startswith("error")]
    assert out.returncode == 2, out.stderr[-3000:]
    assert len(errors) == 1 and "checkpoints/step-000001" in errors[0] and "cannot write it" in errors[0], errors
    assert "Traceback" not in out.stderr and "done:" not in out.stderr
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert not [p.name for p in (run / "checkpoints").iterdir()], "a partial checkpoint or temporary folder stayed"


def test_data_prepare_says_what_it_clamped(tmp_path):
    src = tmp_path / "p.jsonl"
    src.write_text("".join(json.dumps({"problem": f"{i} + 1?", "answer": str(i + 1)}) + "\n" for i in range(10)))
    res = CliRunner().invoke(app, ["data", "prepare", str(src), "--out", str(tmp_path / "d"), "--val-size", "100"])
    assert res.exit_code == 0, res.stderr
    assert "note: --val-size 100: held out 1 of the 10 problems" in res.stderr
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "d" / "val.parquet").num_rows == 1  # what the note says was done


def test_grade_caps_its_workers_at_the_rows(tmp_path):
    rows = tmp_path / "r.jsonl"
    rows.write_text('{"response": "\\\\boxed{2}", "answer": "2"}\n{"response": "\\\\boxed{3}", "answer": "2"}\n')
    res = CliRunner().invoke(app, ["grade", str(rows), "--workers", "500"])
    assert res.exit_code == 0, res.stderr
    assert "--workers 500: capped at" in res.stderr and "(2 rows," in res.stderr
    graded = [json.loads(line) for line in (tmp_path / "r.graded.jsonl").read_text().splitlines()]
    assert [g["correct"] for g in graded] == [True, False]


def test_export_names_the_step_it_could_not_export_whole(tmp_path):
    run = _synthetic(tmp_path / "run")
    damaged = sorted((run / "distributions").glob("*2.parquet"))[0]
    damaged.write_bytes(damaged.read_bytes()[:100])  # truncated
    res = CliRunner().invoke(app, ["export", str(run), "--to", "tensorboard", "--out", str(tmp_path / "tb")])
    assert res.exit_code == 0, res.stderr
    assert "warning: skipped step 2's histograms" in res.stderr and damaged.name in res.stderr


def test_text_from_a_manifest_is_printed_escaped(tmp_path, monkeypatch):
    """NUL, an ANSI escape and a right-to-left override in a manifest's algorithm reach the terminal as escapes."""
    monkeypatch.setenv("COLUMNS", "400")  # the label column unwrapped
    sweep = tmp_path / "sweep"
    run = _synthetic(sweep / "run")
    data = json.loads((run / "manifest.json").read_text())
    data["algorithm"] = "grpo\x00\x1b[2J\u202e"
    (run / "manifest.json").write_text(json.dumps(data))
    res = CliRunner().invoke(app, ["compare", str(sweep)])
    assert res.exit_code == 0, res.output
    assert "\\x00" in res.output and "\\x1b" in res.output and "\\u202e" in res.output
    assert not any(c in res.output + res.stderr for c in ("\x00", "\x1b[2J", "\u202e"))


def test_eval_samples_on_a_full_disk_keep_the_earlier_ones(tmp_path):
    """The evaluator's append-only samples file: a batch the disk cannot take is one WriteError naming the file,
    and the file holds exactly the samples written before it (no torn line)."""
    import pytest

    from dhpo_suite.runs import eval_results as er
    from dhpo_suite.runs.safe_write import WriteError

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        path = disk / "arith.samples.jsonl"
        with er.SampleWriter(path) as w:
            w.write_batch([{"problem_id": "p0", "sample": 0, "response": "kept"}])
            with pytest.raises(WriteError, match="arith.samples.jsonl: cannot write it"):
                w.write_batch([{"problem_id": f"p{i}", "sample": 0, "response": "x" * 1000} for i in range(100)])
        assert path.read_text() == json.dumps({"problem_id": "p0", "sample": 0, "response": "kept"}) + "\n"
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
