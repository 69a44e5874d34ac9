"""`dhpo-suite eval` as users run it: SIGKILL mid-evaluation then --resume; clear errors on bad input."""

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.runs import eval_results as er
from dhpo_suite.testing.load import scaled

PROBLEMS, SAMPLES, MAX_NEW = 4, 32, 32  # the paper's AIME shape: 32 samples a problem (short responses: fast)


def _eval_cmd(model, out, data_dir, benches, *extra):
    """aime24 (32 samples a problem) and amc23 (4); --batch-size 8: samples finish in waves of 8, so a problem's
    32 samples finish over four waves and the kill can fall between them."""
    return [sys.executable, "-m", "dhpo_suite.cli", "eval", "--bench", benches, "--model", str(model), "--out",
            str(out), "--limit", str(PROBLEMS), "--max-new-tokens", str(MAX_NEW), "--batch-size", "8",
            "--grader-workers", "1", "--data-dir", str(data_dir), *extra]


def _by_key(path):
    records = er.read_samples(path).records
    keys = [(r["problem_id"], r["sample"]) for r in records]
    assert len(set(keys)) == len(keys), "a sample is stored twice"
    return dict(zip(keys, records))


@pytest.mark.slow
def test_sigkill_at_32_samples_a_problem_then_resume_equals_an_uninterrupted_run(tiny_model_dir, bench_dir,
                                                                                  tmp_path):
    """Every sample is stored as it finishes (not when its problem's 32 are done), a SIGKILL loses only samples
    still generating, and --resume regenerates exactly the missing ones: the samples files and summary.json then
    equal an uninterrupted run's, sample for sample, although that run did the benchmarks in the other order."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    path = er.samples_path(killed, "aime24")
    proc = subprocess.Popen(_eval_cmd(tiny_model_dir, killed, bench_dir, "aime24,amc23"), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=env)
    deadline = time.time() + scaled(300)
    while time.time() < deadline and proc.poll() is None:
        if path.exists() and path.read_bytes().count(b"\n") >= 1:
            break
        time.sleep(0.02)
    assert proc.poll() is None, f"finished or died before the kill: {proc.stderr.read().decode()[-2000:]}"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = _by_key(path)
    per_problem = {}
    for pid, _ in kept:
        per_problem[pid] = per_problem.get(pid, 0) + 1
    assert 0 < len(kept) < PROBLEMS * SAMPLES
    assert any(0 < c < SAMPLES for c in per_problem.values()), f"only whole problems were stored: {per_problem}"

    resumed = subprocess.run(_eval_cmd(tiny_model_dir, killed, bench_dir, "aime24,amc23", "--resume"),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    done = subprocess.run(_eval_cmd(tiny_model_dir, whole, bench_dir, "amc23,aime24"), stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    after = _by_key(path)
    assert {k: after[k] for k in kept} == kept, "a stored sample was changed by the resume"
    for bench in ("aime24", "amc23"):
        want = _by_key(er.samples_path(whole, bench))
        assert len(want) == PROBLEMS * (SAMPLES if bench == "aime24" else 4)
        assert _by_key(er.samples_path(killed, bench)) == want, bench
    assert er.read_json(killed / er.SUMMARY) == er.read_json(whole / er.SUMMARY)


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


def test_regrade_needs_only_out_labels_the_stored_model_and_grades_as_eval_does(tmp_path):
    """--regrade loads no model: --out alone; the row is the model config.json names (not a --model given);
    each response is graded with its problem text and its truncation, as the evaluation graded it."""
    out = tmp_path / "res"
    problem = "Tom has 14 apples. Tom has 14 bags of rice. How many apples does he have?"
    base = {"bench": "gsm8k", "prompt": "p", "problem": problem, "n_tokens": 9, "gold": ["14"], "extracted": None,
            "answer_source": None, "correct": True, "status": "ok", "reason": "stale"}
    records = [{**base, "problem_id": "0", "sample": 0, "response": "Tom has 14 bags of rice.",  # restated
                "finish_reason": "stop"},
               {**base, "problem_id": "1", "sample": 0, "response": "So he has 14 apples.",  # cut at the budget
                "finish_reason": "length"},
               {**base, "problem_id": "2", "sample": 0, "response": "So he has 14 apples.", "finish_reason": "stop"}]
    er.write_json_atomic(out / er.CONFIG, {"model": "/models/dhpo-e/checkpoints/step-000010", "benches": {
        "gsm8k": {"grader": None, "samples": 1, "problem_ids": ["0", "1", "2"]}}})
    er.rewrite_samples(er.samples_path(out, "gsm8k"), records)
    res = CliRunner().invoke(app, ["eval", "--regrade", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "dhpo-e-step-000010" in res.output
    graded = {r["problem_id"]: r for r in er.read_samples(er.samples_path(out, "gsm8k")).records}
    assert [graded[p]["correct"] for p in "012"] == [False, False, True]
    assert er.read_json(out / er.SUMMARY)["benchmarks"]["gsm8k"]["avg@1"] == pytest.approx(1 / 3)
    res = CliRunner().invoke(app, ["eval", "--regrade"])
    assert res.exit_code == 2 and "--regrade: give --out DIR" in res.output


@pytest.mark.slow
def test_progress_lines_reach_a_log_file_while_it_runs(tiny_model_dir, tmp_path):
    """`eval ... 2> log` (stderr not a terminal): plain lines with samples done/total, tokens/s and the ETA
    appear in the log while the evaluation runs (every DHPO_EVAL_PROGRESS_SECONDS; 30 by default), and one at
    the benchmark's end."""
    log = tmp_path / "log"
    cmd = [sys.executable, "-m", "dhpo_suite.cli", "eval", "--bench", "arithmetic", "--model", str(tiny_model_dir),
           "--out", str(tmp_path / "res"), "--limit", "16", "--samples", "4", "--max-new-tokens", "200",
           "--batch-size", "4", "--grader-workers", "1"]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "DHPO_EVAL_PROGRESS_SECONDS": "1"}
    with open(log, "w") as stderr:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, env=env)
        deadline, seen_running = time.time() + scaled(300), []
        while time.time() < deadline and proc.poll() is None:
            seen_running = [line for line in log.read_text().splitlines() if line.startswith("arithmetic: ")]
            if seen_running:
                break
            time.sleep(0.2)
        running = proc.poll() is None
        proc.wait(timeout=scaled(300))
    assert running and seen_running, f"no progress line while it ran: {log.read_text()[-2000:]}"
    assert re.fullmatch(r"arithmetic: \d+/64 samples, \d+ tokens/s, (ETA (\?|\d+:\d\d:\d\d)|done)", seen_running[0])
    lines = [line for line in log.read_text().splitlines() if line.startswith("arithmetic: ")]
    assert proc.returncode == 0 and lines[-1].startswith("arithmetic: 64/64 samples, ") and lines[-1].endswith("done")
    assert not any("\x1b" in line for line in lines)  # plain lines, no terminal codes


def test_dry_run_prints_the_plan_and_its_cost_and_loads_nothing(tiny_model_dir, bench_dir, tmp_path):
    out = tmp_path / "res"
    res = CliRunner().invoke(app, ["eval", "--dry-run", "--bench", "aime24,amc23", "--model", str(tiny_model_dir),
                                   "--out", str(out), "--data-dir", str(bench_dir), "--limit", "2",
                                   "--max-new-tokens", "100", "--tokens-per-second", "50"])
    assert res.exit_code == 0, res.output
    rows = {line.split()[0]: line.split() for line in res.output.splitlines() if line.split()[:1] in (["aime24"],
                                                                                                        ["amc23"])}
    # problems, samples a problem, samples to generate, budget; worst case = samples x budget (short prompts)
    assert rows["aime24"][1:5] == ["2", "32", "64", "100"] and rows["aime24"][6] == str(64 * 100)
    assert rows["amc23"][1:5] == ["2", "4", "8", "100"] and rows["amc23"][6] == str(8 * 100)
    assert "72 samples to generate, 7200 response tokens at most; at 50 tokens/s" in res.output
    assert "0:02:24" in res.output  # 7200 / 50 = 144 s
    assert "loading" not in res.output and not out.exists()


def test_resume_without_the_saved_protocol_is_refused_before_the_model_loads(tiny_model_dir, bench_dir, tmp_path):
    from dhpo_suite.eval.identity import model_fingerprint

    out = tmp_path / "res"
    er.write_json_atomic(out / er.CONFIG, {"model": str(tiny_model_dir.resolve()), "protocol": "simplerl",
                                           "model_fingerprint": model_fingerprint(tiny_model_dir), "benches": {}})
    er.samples_path(out, "amc23").write_text('{"problem_id": "0", "sample": 0}\n')
    res = CliRunner().invoke(app, ["eval", "--bench", "amc23", "--model", str(tiny_model_dir), "--out", str(out),
                                   "--data-dir", str(bench_dir), "--resume"])
    assert res.exit_code == 2 and "pass --protocol simplerl to resume it" in res.output, res.output
    assert "loading" not in res.output
    help_text = " ".join(CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"}).output.split())
    assert "(--protocol simplerl: 0.95 unless given)" in help_text
