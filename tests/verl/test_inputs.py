"""Data preparation (read back by verl's own RLHFDataset), the reward function, dry runs and bad inputs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.train.verl_backend import data as verl_data
from dhpo_suite.train.verl_backend.launch import run
from dhpo_suite.train.verl_backend.reward import compute_score

BENCHMARKS = Path(os.environ.get("DHPO_BENCHMARKS_DIR", Path(__file__).parents[3] / "shared" / "benchmarks"))


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_prepare_writes_what_verls_dataset_reads(tmp_path, tiny_model_dir):
    src = BENCHMARKS / "gsm8k.jsonl"
    if not src.exists():
        pytest.skip(f"{src} not found (set DHPO_BENCHMARKS_DIR)")
    res = verl_data.prepare(src, tmp_path / "out", limit=40, val_size=4)
    assert (res.n_train, res.n_val) == (36, 4)
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    cfg = OmegaConf.create({"max_prompt_length": 1024, "filter_overlong_prompts": False,
                            "cache_dir": str(tmp_path / "cache")})
    ds = RLHFDataset(str(res.train), tok, cfg)
    row = ds[0]
    first = json.loads(src.read_text().splitlines()[0])
    assert len(ds) == 36 and row["data_source"] == "gsm8k"
    held_out = {r["extra_info"]["index"] for r in __import__("pyarrow.parquet").parquet.read_table(res.val).to_pylist()}
    assert 0 in held_out or row["reward_model"]["ground_truth"] == str(first["answer"])
    assert row["raw_prompt"][0]["role"] == "user" and "\\boxed{}" in row["raw_prompt"][0]["content"]
    assert row["reward_model"]["style"] == "rule"


def test_reward_is_the_grader(tmp_path):
    assert compute_score("math", "so it is \\boxed{\\frac{1}{2}}", "0.5")["score"] == 1.0
    assert compute_score("math", "so it is \\boxed{3}", ["4", "3"])["score"] == 1.0
    miss = compute_score("math", "I do not know", "7")
    assert miss["score"] == 0.0 and miss["no_answer"] == 1.0


@pytest.mark.slow
def test_dry_run_through_the_cli_prints_the_command_and_config(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "dhpo_suite.cli", "train", "--backend", "verl", "--algo", "gspo", "--preset",
         "qwen3-1.7b", "--dry-run", "--out", str(tmp_path / "run"), "trainer.total_training_steps=5"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    command, *config = out.stdout.splitlines()
    assert out.stdout.count("dhpo_suite.gspo: the loss's settings") == 1  # the table the launch prints
    assert command.split()[1:3] == ["-m", "verl.trainer.main_ppo"]
    assert "actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.gspo" in command
    assert "actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-mean" in command
    # the user's overrides come last, then what follows from them unless set (lengths -> vLLM's context and the
    # token budgets, steps -> epochs, truncation budget), then Hydra's job directory inside the run directory
    assert command.split()[-7:] == ["trainer.total_training_steps=5",
                                    "++actor_rollout_ref.rollout.max_model_len=5120",
                                    "++actor_rollout_ref.actor.ppo_max_token_len_per_gpu=32768",
                                    "++actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=65536",
                                    "++actor_rollout_ref.actor.policy_loss.telemetry.max_response_length=4096",
                                    "++trainer.total_epochs=5", f"hydra.run.dir={tmp_path / 'run' / 'verl' / 'hydra'}"]
    text = "\n".join(config)
    assert "loss_mode: dhpo_suite.gspo" in text and "total_training_steps: 5" in text
    assert not (tmp_path / "run").exists()  # a dry run writes nothing


@pytest.mark.parametrize("algo,preset,needle", [
    ("dhpo-x", "qwen3-4b", "--algo: unknown objective 'dhpo-x'"),
    ("dhpo-e", "qwen3-4", "--preset: unknown preset 'qwen3-4' (did you mean 'qwen3-4b'?)"),
])
def test_bad_algorithm_or_preset_is_one_error_line(capsys, algo, preset, needle):
    assert run(algo, preset, dry_run=True) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0]


def test_missing_training_data_is_one_error_line(capsys, tmp_path):
    assert run("grpo", "qwen3-4b", out=tmp_path / "run", data_dir=tmp_path / "nothing") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "data.train_files" in err[0] and "dhpo-suite data prepare" in err[0]
    assert not (tmp_path / "run").exists()


def test_bad_model_path_is_one_line_before_composition(tmp_path):
    """No run directory, no Ray, no verl composition: the path is checked from the overrides (issue 25)."""
    import time

    start = time.monotonic()
    result = CliRunner().invoke(app, ["train", "--backend", "verl", "--out", str(tmp_path / "run"),
                                      "actor_rollout_ref.model.path=/no/such/model"])
    assert result.exit_code == 2
    assert result.stderr.strip() == ("error: actor_rollout_ref.model.path=/no/such/model: no such model directory "
                                     "(nor a hub id such as Qwen/Qwen3-1.7B-Base)")
    assert not (tmp_path / "run").exists()
    assert time.monotonic() - start < 10  # composition alone takes ~17 s here


def test_dry_run_prints_the_losss_settings_once(tmp_path):
    result = CliRunner().invoke(app, ["train", "--backend", "verl", "--algo", "gspo", "--dry-run",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("dhpo_suite.gspo: the loss's settings") == 1
    assert "eps_low        0.0003" in result.stdout  # GSPO's paper region, not verl's 0.2


def test_dry_run_shows_verls_algorithm_around_the_loss(tmp_path):
    result = CliRunner().invoke(app, ["train", "--backend", "verl", "--algo", "dhpo-e", "--dry-run",
                                      "--out", str(tmp_path / "run"), "actor_rollout_ref.rollout.n=8"])
    assert result.exit_code == 0, result.output
    table = result.stdout[result.stdout.index("verl's algorithm around it"):].splitlines()
    assert table[1].split() == ["adv_estimator", "grpo", "algorithm.adv_estimator"]
    assert table[2].split() == ["rollout.n", "8", "actor_rollout_ref.rollout.n"]  # the group size, the user's
    assert table[3].split() == ["rollout_correction", "off", "algorithm.rollout_correction"]


@pytest.mark.parametrize("override, needle", [
    ("algorithm.adv_estimator=bogus", "error: algorithm.adv_estimator=bogus: "),
    ("actor_rollout_ref.rollout.n=1", "error: actor_rollout_ref.rollout.n=1: "),
])
def test_dry_run_refuses_a_setting_that_changes_the_algorithm(tmp_path, override, needle):
    result = CliRunner().invoke(app, ["train", "--backend", "verl", "--algo", "dhpo-e", "--dry-run",
                                      "--out", str(tmp_path / "run"), override])
    assert result.exit_code == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith(needle), result.stderr


@pytest.mark.parametrize("dry_run", [True, False])
def test_verls_own_loss_through_the_launcher_is_one_line_and_no_lock(tmp_path, tiny_model_dir, capsys, dry_run):
    """`--algo gspo ... policy_loss.loss_mode=gspo` (verl's own GSPO, not ours): refused in one line naming the
    key, before any run directory or `.writer.lock` exists (it used to end in an AttributeError, lock left)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "data"
    data.mkdir()
    for name in ("train", "val"):
        pq.write_table(pa.table({"prompt": ["What is 1 + 1?"] * 512, "answer": ["2"] * 512}), data / f"{name}.parquet")
    code = run("gspo", "qwen3-1.7b", [f"actor_rollout_ref.model.path={tiny_model_dir}",
                                      "actor_rollout_ref.actor.policy_loss.loss_mode=gspo"],
               dry_run=dry_run, out=tmp_path / "run", data_dir=data)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("error: actor_rollout_ref.actor.policy_loss.loss_mode=gspo: not a dhpo_suite loss")
    assert not (tmp_path / "run").exists()


def test_data_file_without_answers_is_one_error_line(tmp_path):
    src = _jsonl(tmp_path / "probs.jsonl", [{"problem": "1+1", "answer": "2"}, {"problem": "2+2"}])
    result = CliRunner().invoke(app, ["data", "prepare", str(src), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {src}:2: no answer"), result.output
    assert not (tmp_path / "out" / "train.parquet").exists()


@pytest.mark.parametrize("text, needle", [
    ('{"problem": "1+1", "answer": "2"}', "expected a JSON list of objects, got dict"),
    ('[{"problem": "1+1", "answer": "2"}, 3]', ":item 2: expected a JSON object, got int"),
    ('[{"problem": "1+1",\n "answer": }]', ":2: invalid JSON (Expecting value at column 12)"),
])
def test_bad_json_data_file_is_one_error_line_naming_the_place(tmp_path, text, needle):
    src = tmp_path / "probs.json"
    src.write_text(text)
    result = CliRunner().invoke(app, ["data", "prepare", str(src), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {src}") and needle in lines[0], result.output


def test_hub_loader_names_the_papers_split(monkeypatch, tmp_path):
    # No hub access here: check the real loading code asks for the paper's files, fed by a local stand-in.
    seen = {}

    def fake_load_dataset(repo, data_files, split):
        seen[split] = (repo, data_files[split])
        return [{"question": f"q{i}", "ground_truth_answer": str(i)} for i in range(3)]

    import datasets

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    res = verl_data.prepare("simplerl-zoo", tmp_path)
    assert seen == {"train": ("hkust-nlp/SimpleRL-Zoo-Data", "simplelr_qwen_level3to5/train.parquet"),
                    "test": ("hkust-nlp/SimpleRL-Zoo-Data", "simplelr_qwen_level3to5/test.parquet")}
    assert (res.n_train, res.n_val) == (3, 3)


def test_resume_needs_a_run_to_continue(tmp_path):
    result = CliRunner().invoke(app, ["train", "--backend", "verl", "--resume", "--out", str(tmp_path / "none")])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: --resume: {tmp_path / 'none'} holds no run to continue (no manifest.json)"
    assert not (tmp_path / "none").exists()
