"""The path a user runs: `dhpo-suite train --backend verl` -> Hydra -> Ray (local) -> verl 0.9.1's v1 trainer
(TransferQueue) -> FSDP2 actor with the plugin's loss -> reward from the project's grader -> run directory.

On CPU (VERL_PLATFORM=cpu, cpu_platform.py) with the tiny model, 2 prompts x 2 responses of at most 16 tokens.
Nothing of verl is replaced: rollouts come from the CPU rollout server registered through verl's
RolloutReplicaRegistry, which loads the actor's weights after every step.

- dhpo-e runs `--steps 2` to the end: both steps' telemetry (per-branch clip fractions, entropy, w, reward),
  the final checkpoint exported into the run directory, manifest `completed`; the data holds 2 problems for
  2 prompts per step, so the run also needs the epoch fix (1 step per epoch, 2 steps).
- grpo (a baseline) runs `--steps 3` with `trainer.critic_warmup=2` (its first actor update is verl's step 2,
  and telemetry numbers it so); a second launch on the same `--out` is refused while it runs; it gets
  SIGTERM once step 2 is written: the manifest says `interrupted` and every process the launch started
  (verl's driver, Ray, its workers) is gone. Its steps carry `entropy/mean` (every objective logs entropy).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dhpo_suite.runs import SHARED_HPARAMS, RunReader, read_manifest
from dhpo_suite.runs.lock import holder_of
from dhpo_suite.testing.load import scaled
from dhpo_suite.train.verl_backend.data import INSTRUCTION
from dhpo_suite.train.verl_backend.reward import compute_score

pytestmark = pytest.mark.slow

# One answer for every problem: a recorded response can be re-graded without knowing its prompt.
PROBLEMS = [{"problem": f"What is {a} + {b}?", "answer": "5"} for a, b in ((2, 3), (4, 1), (0, 5))]
SMALL = [  # the smallest run that is still verl's: 2 prompts x 2 responses, 16 tokens, one CPU "GPU"
    "trainer.n_gpus_per_node=1", "trainer.nnodes=1", "data.train_batch_size=2", "actor_rollout_ref.rollout.n=2",
    "actor_rollout_ref.actor.ppo_mini_batch_size=2", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4", "data.max_prompt_length=256",
    "data.max_response_length=16", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=1024",
    "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=1024", "actor_rollout_ref.rollout.max_model_len=272",
    "actor_rollout_ref.actor.optim.lr_warmup_steps=0", "actor_rollout_ref.model.enable_gradient_checkpointing=false",
    "+actor_rollout_ref.actor.policy_loss.telemetry.top_k=4",
    "+actor_rollout_ref.actor.policy_loss.telemetry.n_samples=4",
]
TIMEOUT = scaled(900)  # a quiet machine's limit, times the measured slowdown (dhpo_suite/testing/load.py)
RAY_START_FAILED = "timed out during startup"  # Ray's raylet has a fixed 30 s limit to register, busy or not


def _ray_start_failed(log: Path) -> bool:
    """The launch died because Ray's node did not start in time (on a busy machine): worth one retry."""
    return RAY_START_FAILED in log.read_text(errors="replace")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("verl-data")
    src = root / "problems.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "data", "prepare", str(src), "--out", str(root / "data"),
                    "--val-size", "1"], check=True, capture_output=True, timeout=300)
    return root / "data"


def _command(algo: str, steps: int, run_dir: Path, data: Path, model: Path) -> list[str]:
    return [sys.executable, "-m", "dhpo_suite.cli", "train", "--backend", "verl", "--algo", algo,
            "--preset", "qwen3-1.7b", "--steps", str(steps), "--out", str(run_dir),
            f"data.train_files={data / 'train.parquet'}", f"data.val_files={data / 'val.parquet'}",
            f"actor_rollout_ref.model.path={model}", *SMALL]


def _env() -> dict[str, str]:
    return {**os.environ, "VERL_PLATFORM": "cpu", "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def dhpo_e_run(tmp_path_factory, tiny_model_dir, data_dir):
    run_dir = tmp_path_factory.mktemp("verl-launch") / "dhpo-e"
    log = run_dir.parent / "launch.log"
    for attempt in range(2):  # once more if Ray itself did not start in time
        with open(log, "w") as f:
            code = subprocess.run(_command("dhpo-e", 2, run_dir, data_dir, tiny_model_dir), env=_env(), stdout=f,
                                  stderr=subprocess.STDOUT, timeout=TIMEOUT, cwd=run_dir.parent).returncode
        if code == 0 or not _ray_start_failed(log):
            break
    assert code == 0, log.read_text()[-6000:]
    return run_dir


def test_two_real_steps_through_verls_v1_trainer(dhpo_e_run):
    reader = RunReader(dhpo_e_run)
    assert reader.steps() == [1, 2]
    scalars = reader.scalars()
    for _, row in scalars.iterrows():
        assert row["responses/count"] == 4 and row["groups/count"] == 2  # 2 prompts x 2 responses
        assert 0 < row["w/mean"] < 1 and math.isfinite(row["entropy/mean"])  # DHPO-E's entropy-guided w
        assert math.isfinite(row["reward/mean"]) and 0 <= row["reward/mean"] <= 1  # from rm_scores
        assert 1 <= row["length/mean"] <= 16
        for branch in ("token", "sequence", "mixed"):  # per-branch clip fractions
            for side in ("outside_low", "outside_high", "binding"):
                assert 0 <= row[f"clip/{branch}/{side}"] <= 1, (branch, side)
        # A random model seldom answers: the grader gives 0 to all four, GRPO advantages are 0 and so is the
        # gradient. Updates that move weights are checked at the worker (test_worker.py, given rewards).
        assert row["grad_norm"] >= 0 and row["lr"] > 0
    m = reader.manifest
    assert (m.status, m.backend, m.algorithm) == ("completed", "verl", "dhpo-e")
    assert m.config["trainer"]["total_epochs"] == 2  # 1 step per epoch here: the epoch bound must not stop it
    shared = {k: m.hparams[k] for k in SHARED_HPARAMS}  # the embedded trainer's keys, from verl's config (SMALL)
    actor = m.config["actor_rollout_ref"]["actor"]
    assert shared == {"lr": actor["optim"]["lr"], "weight_decay": actor["optim"]["weight_decay"], "warmup_steps": 0,
                      "max_grad_norm": actor["grad_clip"], "group_size": 2, "prompts_per_step": 2, "ppo_epochs": 1,
                      "mini_batches": 1}
    assert actor["optim"]["weight_decay"] == 0.1  # the preset's, as Appendix D


def test_the_losss_settings_are_printed_once_at_start_up(dhpo_e_run):
    log = (dhpo_e_run.parent / "launch.log").read_text()
    assert log.count("dhpo_suite.dhpo-e: the loss's settings") == 1  # by verl's driver, before Ray
    assert log.index("the loss's settings") < log.index("ray init kwargs")


def test_hydra_writes_into_the_run_directory_not_the_working_directory(dhpo_e_run):
    assert (dhpo_e_run / "verl" / "hydra" / "main_ppo.log").is_file()
    assert not (dhpo_e_run.parent / "outputs").exists()  # hydra's default: ./outputs/<date>/<time>


def test_rewards_are_the_graders_verdicts(dhpo_e_run, tiny_model_dir):
    # Each recorded response's reward is what the project's grader says of its decoded text (verl's reward
    # loop decodes without special tokens and calls reward.compute_score).
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    reader = RunReader(dhpo_e_run)
    for step in (1, 2):
        samples = reader.samples(step)
        assert len(samples) == 4
        for _, s in samples.iterrows():
            text = tok.decode(list(s["token_id"]), skip_special_tokens=True)
            assert s["reward"] == compute_score("problems", text, "5")["score"], text


def test_every_kept_response_records_its_problem_and_gold(dhpo_e_run):
    # The problem as the user turn showed it (verl's raw_prompt, from the Parquet `data prepare` wrote) and the
    # gold the reward graded against (reward_model.ground_truth): one problem per group of rollout.n = 2.
    asked = {p["problem"] + INSTRUCTION for p in PROBLEMS}
    reader = RunReader(dhpo_e_run)
    for step in (1, 2):
        kept = reader.responses(step)
        assert len(kept) == 4 and set(kept["prompt"]) <= asked and set(kept["gold"]) == {"5"}, kept[["prompt", "gold"]]
        assert kept.groupby(kept["response_id"] // 2)["prompt"].nunique().eq(1).all()


def test_final_checkpoint_is_exported_and_loads(dhpo_e_run):
    ckpts = RunReader(dhpo_e_run).checkpoints()
    assert list(ckpts) == [2]
    from transformers import AutoModelForCausalLM

    assert AutoModelForCausalLM.from_pretrained(ckpts[2]).config.model_type == "qwen3"


@pytest.mark.timeout(3 * TIMEOUT)  # two launches (the second refused), perhaps a Ray retry, on a busy machine
def test_sigterm_stops_the_run_and_every_process(tmp_path, tiny_model_dir, data_dir):
    run_dir = tmp_path / "grpo"
    log = open(tmp_path / "launch.log", "w")
    # critic_warmup=2: verl updates the actor from its global step 2 on, so the first update is step 2, not 1.
    command = [*_command("grpo", 3, run_dir, data_dir, tiny_model_dir), "trainer.critic_warmup=2"]
    proc = subprocess.Popen(command, env=_env(), stdout=log, stderr=subprocess.STDOUT)
    retried = False
    launched: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + TIMEOUT
    try:
        while not holder_of(run_dir):  # the first launch holds the run directory (it then starts Ray, verl, ...)
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "launch.log").read_text()[-6000:]
            time.sleep(0.5)
        # One writer per run directory: a second launch on the same --out is refused, not taken as a resume.
        started = time.monotonic()
        second = subprocess.run(_command("grpo", 3, run_dir, data_dir, tiny_model_dir), env=_env(),
                                capture_output=True, text=True, timeout=TIMEOUT)
        print(f"second launch refused after {time.monotonic() - started:.0f} s")
        assert second.returncode == 2 and "another writer is using it" in second.stderr, second.stderr[-3000:]
        while not (run_dir / "scalars" / "step-000002.parquet").exists():
            if proc.poll() is not None and not retried and _ray_start_failed(tmp_path / "launch.log"):
                retried = True  # Ray's node did not start in time: the same launch again (it resumes)
                proc = subprocess.Popen(command, env=_env(), stdout=log, stderr=subprocess.STDOUT)
            assert proc.poll() is None, (tmp_path / "launch.log").read_text()[-6000:]
            assert time.monotonic() < deadline, "step 2 never came"
            for p in psutil.Process(proc.pid).children(recursive=True):  # the driver, Ray, its workers
                launched.setdefault(p.pid, p)
            time.sleep(1)
        for p in psutil.Process(proc.pid).children(recursive=True):
            launched.setdefault(p.pid, p)
        assert proc.poll() is None  # the second launch (above) left the first untouched
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
        log.close()
    assert len(launched) > 5  # driver + Ray's processes + verl's workers
    alive = [p for p in launched.values() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert not alive, [" ".join(p.cmdline()[:3]) for p in alive]
    m = read_manifest(run_dir)
    assert m.status == "interrupted" and "SIGTERM" in m.error
    reader = RunReader(run_dir)
    assert reader.steps()[0] == 2  # telemetry's step is verl's global step (counting updates would say 1)
    row = reader.scalars().iloc[0]
    assert row["responses/count"] == 4 and math.isfinite(row["reward/mean"])
    assert math.isfinite(row["ratio/token/mean"]) and 0 <= row["clip/token/binding"] <= 1
    assert reader.manifest.algorithm == "grpo"
    # A baseline logs the entropy too: the paper's Fig. 1b (GRPO's entropy against DHPO's) from verl runs.
    assert math.isfinite(row["entropy/mean"]) and row["entropy/mean"] > 0


def _job(proc: subprocess.Popen, launched: dict[int, psutil.Process]) -> None:
    """Note every process the launch started so far (the reaper, verl's driver, Ray, its workers)."""
    with contextlib.suppress(psutil.Error):
        for p in psutil.Process(proc.pid).children(recursive=True):
            launched.setdefault(p.pid, p)


def _marked(marker: str) -> list[str]:
    """Live processes whose environment carries this launch's marker (supervise.RUN_MARKER)."""
    found = []
    for p in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError):
            if p.environ().get("DHPO_SUITE_VERL_RUN") == marker and p.status() != psutil.STATUS_ZOMBIE:
                found.append(" ".join(p.cmdline()[:3]))
    return found


@pytest.mark.timeout(4 * TIMEOUT)  # a launch killed after step 1, then its resume to step 3, on a busy machine
def test_sigkill_of_the_launcher_ends_its_job_and_resume_continues(tmp_path, tiny_model_dir, data_dir):
    """`kill -9` of `dhpo-suite train` (or the OOM killer): within 60 s no process of the job is left (verl's
    driver, Ray and its workers used to train on under PID 1), the manifest is not left `running`, and a
    relaunch with --resume continues from verl's checkpoint: steps 1, 2, 3, none missing or twice."""
    run_dir = tmp_path / "killed"
    log_path = tmp_path / "launch.log"
    command = [*_command("grpo", 3, run_dir, data_dir, tiny_model_dir), "trainer.save_freq=1"]
    launched: dict[int, psutil.Process] = {}
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, env=_env(), stdout=log, stderr=subprocess.STDOUT)
        retried = False
        deadline = time.monotonic() + TIMEOUT
        try:  # step 1 is committed (telemetry) and checkpointed (verl) before the kill
            while not ((run_dir / "scalars" / "step-000001.parquet").exists()
                       and (run_dir / "verl" / "latest_checkpointed_iteration.txt").exists()):
                if proc.poll() is not None and not retried and _ray_start_failed(log_path):
                    retried = True
                    proc = subprocess.Popen(command, env=_env(), stdout=log, stderr=subprocess.STDOUT)
                assert proc.poll() is None, log_path.read_text()[-6000:]
                assert time.monotonic() < deadline, "step 1 never came"
                _job(proc, launched)
                time.sleep(0.5)
            _job(proc, launched)
            driver = next(p for p in launched.values() if "verl.trainer.main_ppo" in " ".join(p.cmdline()))
            marker = driver.environ()["DHPO_SUITE_VERL_RUN"]
            proc.kill()
            killed = time.monotonic()
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
    _, alive = psutil.wait_procs(list(launched.values()), timeout=60)
    alive = [p for p in alive if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    print(f"{len(launched)} processes of the job, ended {time.monotonic() - killed:.0f} s after the kill")
    assert len(launched) > 5 and not alive, [" ".join(p.cmdline()[:3]) for p in alive]
    assert not _marked(marker)
    m = read_manifest(run_dir)
    assert m.status == "failed" and "the launcher" in m.error and "ended without closing the run" in m.error
    resumed = subprocess.run([*command, "--resume"], env=_env(), capture_output=True, text=True, timeout=TIMEOUT)
    assert resumed.returncode == 0, resumed.stdout[-6000:]
    reader = RunReader(run_dir)
    assert reader.steps() == [1, 2, 3]
    assert list(reader.scalars()["step"]) == [1, 2, 3]  # one row each
    assert reader.manifest.status == "completed"


def test_the_dashboard_opens_the_run(dhpo_e_run, monkeypatch):
    from dhpo_suite.dashboard.registry import PAGES
    from tests.dashboard.dash_helpers import no_errors, open_page, texts

    for page in PAGES:
        at = open_page(monkeypatch, dhpo_e_run.parent, page.file)
        no_errors(at)
        if page.file == "runs.py":
            assert any("dhpo-e" in str(df.value) for df in at.dataframe), "the runs table does not list the run"
        if page.file == "rollouts.py":  # the responses view: each response under its problem and gold answer
            shown = texts(at)
            assert "**Gold answer** `5`" in shown, shown[-2000:]
            assert any(f"**Prompt** {p['problem']}" in shown for p in PROBLEMS), shown[-2000:]
