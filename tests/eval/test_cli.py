"""`dhpo-suite eval` as users run it: SIGKILL mid-evaluation then --resume; clear errors on bad input."""

import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.runs import eval_results as er
from dhpo_suite.testing.load import scaled

N, SAMPLES, MAX_NEW = 24, 4, 600


def _eval_cmd(model, out):
    """Default --batch-size (256): all 96 samples are in the engine at once; the random tiny model stops at a
    random token (eos ~1/512 per token), so samples finish one by one over many seconds."""
    return [sys.executable, "-m", "dhpo_suite.cli", "eval", "--bench", "arithmetic", "--model", str(model), "--out",
            str(out), "--limit", str(N), "--samples", str(SAMPLES), "--max-new-tokens", str(MAX_NEW),
            "--grader-workers", "1"]


@pytest.mark.slow
def test_sigkill_at_the_default_batch_size_keeps_every_finished_sample(tiny_model_dir, tmp_path):
    """Samples reach the file one by one while the batch is still generating (not when 256 have finished),
    so a SIGKILL loses only requests in flight. (--resume after a kill: test_end_to_end's resume test.)"""
    out = tmp_path / "res"
    path = er.samples_path(out, "arithmetic")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(_eval_cmd(tiny_model_dir, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env=env)
    counts, deadline = [], time.time() + scaled(240)  # 240 s on a quiet machine, more on a busy one
    while time.time() < deadline and proc.poll() is None:
        lines = path.read_bytes().count(b"\n") if path.exists() else 0
        if lines and (not counts or lines != counts[-1]):
            counts.append(lines)
        if lines >= 8 and len(counts) >= 3:
            break
        time.sleep(0.05)
    assert proc.poll() is None, f"finished or died before the kill: {proc.stderr.read().decode()[-2000:]}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = er.read_samples(path)
    assert len(counts) >= 3, f"samples arrived in one lump, not as they finished: {counts}"
    assert counts[-1] <= len(kept.records) < N * SAMPLES, "a stored sample was lost, or the kill came too late"
    assert len({(r["problem_id"], r["sample"]) for r in kept.records}) == len(kept.records)
    assert all(r["status"] in ("ok", "no_answer") and r["n_tokens"] >= 1 for r in kept.records)


@pytest.mark.parametrize("args, message", [
    (["--bench", "aime23", "--model", "."], "unknown benchmark"),
    (["--bench", "arith"], "exactly one of --model PATH or --run RUN_DIR"),
    (["--bench", "arith", "--model", "/nonexistent/m"], "is not a directory"),
    (["--bench", "arith", "--run", "."], "no complete checkpoints"),
])
def test_bad_arguments_fail_with_a_clear_message(args, message):
    res = CliRunner().invoke(app, ["eval", *args])
    assert res.exit_code == 2
    assert message in res.output


def test_malformed_data_file_fails_before_loading_the_model(tmp_path):
    (tmp_path / "aime24.jsonl").write_text('{"id": "1", "problem": "P", "answer": "5"}\n{"id": "2", "problem": "Q"}\n')
    (tmp_path / "config.json").write_text("{}")
    res = CliRunner().invoke(app, ["eval", "--bench", "aime24", "--model", str(tmp_path), "--data-dir", str(tmp_path),
                                      "--out", str(tmp_path / "results")])
    assert res.exit_code == 2
    assert "aime24.jsonl:2: field 'answer': missing" in res.output.replace("\n", "")


def test_run_mode_targets_complete_checkpoints_and_stores_results_in_the_run(tmp_path):
    from dhpo_suite.eval.cli import _targets
    from dhpo_suite.runs.format import checkpoint_marker, checkpoint_path

    for step in (10, 20, 30):
        checkpoint_path(tmp_path, step).mkdir(parents=True)
        (checkpoint_path(tmp_path, step) / "config.json").write_text("{}")
    for step in (10, 20):  # step 30 is still being written
        checkpoint_marker(checkpoint_path(tmp_path, step)).touch()
    targets = _targets(None, tmp_path, "all", None)
    assert [(t[0], t[2]) for t in targets] == [("step 10", tmp_path / "evals" / "step-000010"),
                                               ("step 20", tmp_path / "evals" / "step-000020")]
    assert targets[0][1] == str(checkpoint_path(tmp_path, 10))
    assert [t[0] for t in _targets(None, tmp_path, "last", None)] == ["step 20"]
    with pytest.raises(Exception, match=r"step\(s\) \[30\]"):
        _targets(None, tmp_path, "10,30", None)
    (checkpoint_path(tmp_path, 20) / "config.json").unlink()
    with pytest.raises(Exception, match="step-000020 is not a Hugging Face model directory"):
        _targets(None, tmp_path, "last", None)


def test_results_tables_render_the_paper_layout():
    from rich.console import Console

    from dhpo_suite.eval.report import detail_table, headline_table

    m = {"headline": "avg@4", "avg@4": 0.25, "pass@4": 0.5, "maj@4": 0.375, "len_mean": 812.0, "len_median": 640.0,
         "trunc_rate": 0.1, "boxed_rate": 0.9, "grader_timeouts": 1, "grader_errors": 0, "n_problems": 40,
         "n_samples": 4}
    summary = {"benchmarks": {"amc23": m, "math500": {**m, "headline": "avg@1", "avg@1": 0.5}}, "AVG": 0.375}
    console = Console(record=True, width=160)
    console.print(headline_table({"step 10": summary}))
    console.print(detail_table(summary))
    text = console.export_text()
    assert "amc23" in text and "avg@4" in text and "AVG" in text and "37.5" in text and "step 10" in text
    assert "25.0" in text and "50.0" in text and "812" in text


def test_resume_with_another_model_refuses_before_loading_it(tiny_model_dir, tmp_path):
    """The stored results' model (path + content fingerprint) is checked before any engine starts: fast, one line."""
    import shutil

    from dhpo_suite.eval.identity import model_fingerprint

    other = tmp_path / "other"
    shutil.copytree(tiny_model_dir, other)
    out = tmp_path / "res"
    out.mkdir()
    config = {"model": str(other.resolve()), "model_fingerprint": model_fingerprint(other), "benches": {}}
    er.write_json_atomic(out / er.CONFIG, config)
    er.samples_path(out, "arithmetic").write_text('{"problem_id": "test-0-0", "sample": 0}\n')
    args = ["eval", "--bench", "arithmetic", "--out", str(out), "--limit", "2"]
    res = CliRunner().invoke(app, [*args, "--model", str(tiny_model_dir), "--resume"])
    assert res.exit_code == 2 and "field 'model': the stored evaluation used" in res.output, res.output
    res = CliRunner().invoke(app, [*args, "--model", str(other)])
    assert res.exit_code == 2 and "holds results already; pass --resume" in res.output
    weights = next(other.glob("*.safetensors"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of the last tensor: same path, same size, other content
    weights.write_bytes(bytes(data))
    res = CliRunner().invoke(app, [*args, "--model", str(other), "--resume"])
    assert res.exit_code == 2 and "field 'model_fingerprint'" in res.output, res.output


def test_default_results_dirs_of_two_checkpoints_never_collide(tmp_path):
    from dhpo_suite.eval.identity import default_out_dir

    a, b = (tmp_path / run / "checkpoints" / "step-000010" for run in ("dhpo-e", "grpo"))
    c = tmp_path / "elsewhere" / "dhpo-e" / "checkpoints" / "step-000010"
    dirs = [default_out_dir(p) for p in (a, b, c)]
    assert dirs[0].name.startswith("dhpo-e-step-000010-") and dirs[1].name.startswith("grpo-step-000010-")
    assert len(set(dirs)) == 3 and all(d.parent.name == "eval-results" for d in dirs)


def test_a_sweep_child_gets_the_users_options_with_its_own_model_and_out():
    import typer

    from dhpo_suite.eval.cli import child_argv

    cmd = typer.main.get_command(app).commands["eval"]
    values = {p.name: p.default for p in cmd.params}
    values.update(run="runs/x", steps="all", samples=4, resume=True, temperature=0.6, bench="arithmetic")
    argv = child_argv(cmd.params, values, "runs/x/checkpoints/step-000010", "runs/x/evals/step-000010")
    assert argv[:3] == [sys.executable, "-m", "dhpo_suite.cli"]
    args = argv[3:]
    assert args[0] == "eval" and "--run" not in args and "--steps" not in args
    child = cmd.make_context("eval", args[1:]).params  # the child parses what the user gave
    assert child["bench"] == "arithmetic" and child["samples"] == 4 and child["temperature"] == 0.6
    assert child["resume"] is True and args[-4:] == ["--model", "runs/x/checkpoints/step-000010", "--out",
                                                "runs/x/evals/step-000010"]
