"""The path a user runs: `dhpo-suite train --backend verl` -> Hydra -> Ray (local) -> verl 0.9.1's v1 trainer
(TransferQueue) -> FSDP2 actor with the plugin's loss -> reward from the project's grader -> run directory.

On CPU (VERL_PLATFORM=cpu, cpu_platform.py) with the tiny model, 2 prompts x 2 responses of at most 16 tokens.
Nothing of verl is replaced: rollouts come from the CPU rollout server registered through verl's
RolloutReplicaRegistry, which loads the actor's weights after every step.

- dhpo-e runs `--steps 2` to the end: both steps' telemetry (per-branch clip fractions, entropy, w, reward),
  the final checkpoint exported into the run directory, manifest `completed`; the data holds 2 problems for
  2 prompts per step, so the run also needs the epoch fix (1 step per epoch, 2 steps).
- grpo (a baseline) runs `--steps 30` with a checkpoint every step; a second launch on the same `--out` is
  refused while it runs; the launcher gets SIGKILL once step 1 is checkpointed: every process of the job is
  gone within 60 s and the manifest says `failed` (until the reaper's grace ends it, the job may commit more
  steps: k in all). Its relaunch with `--resume` continues after step k and gets SIGTERM once it has
  committed a new step: the manifest says `interrupted` and every process the launch started (verl's driver,
  Ray, its workers) is gone; steps 1 to k + 1 once each, with `entropy/mean` (every objective logs entropy).

test_plain_verl.py runs the same job without the launcher (`python -m verl.trainer.main_ppo`), grpo with
`trainer.critic_warmup=2`: its first actor update is verl's step 2, and telemetry numbers it so.
"""

from __future__ import annotations

import contextlib
import math
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dhpo_suite.runs import SHARED_HPARAMS, RunReader, read_manifest
from dhpo_suite.runs.lock import holder_of
from dhpo_suite.train.verl_backend.data import INSTRUCTION
from tests.verl.launches import (PROBLEMS, SMALL, TIMEOUT, assert_rewards_are_the_graders, ray_start_failed,
                                 run_to_end, verl_env)

pytestmark = pytest.mark.slow


def _command(algo: str, steps: int, run_dir: Path, data: Path, model: Path) -> list[str]:
    return [sys.executable, "-m", "dhpo_suite.cli", "train", "--backend", "verl", "--algo", algo,
            "--preset", "qwen3-1.7b", "--steps", str(steps), "--out", str(run_dir),
            f"data.train_files={data / 'train.parquet'}", f"data.val_files={data / 'val.parquet'}",
            f"actor_rollout_ref.model.path={model}", *SMALL]


@pytest.fixture(scope="module")
def dhpo_e_run(tmp_path_factory, tiny_model_dir, data_dir):
    run_dir = tmp_path_factory.mktemp("verl-launch") / "dhpo-e"
    log = run_dir.parent / "launch.log"
    code = run_to_end(_command("dhpo-e", 2, run_dir, data_dir, tiny_model_dir), log, cwd=run_dir.parent)
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
    assert_rewards_are_the_graders(dhpo_e_run, tiny_model_dir, [1, 2])


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


def _alive(launched: dict[int, psutil.Process]) -> list[str]:
    """The noted processes still running (not zombies)."""
    alive = []
    for p in launched.values():
        with contextlib.suppress(psutil.NoSuchProcess):  # ended while looked at
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(" ".join(p.cmdline()[:3]))
    return alive


def _until(ready, proc: subprocess.Popen, command: list[str], log, launched: dict[int, psutil.Process],
           what: str) -> subprocess.Popen:
    """Wait for `ready()` while the launch runs, noting its processes. Returns the launch: `proc`, or the same
    command started once more where Ray's node did not start in time (it resumes)."""
    retried, deadline = False, time.monotonic() + TIMEOUT
    while not ready():
        if proc.poll() is not None and not retried and ray_start_failed(Path(log.name)):
            retried = True
            proc = subprocess.Popen(command, env=verl_env(), stdout=log, stderr=subprocess.STDOUT)
        assert proc.poll() is None, Path(log.name).read_text()[-6000:]
        assert time.monotonic() < deadline, f"{what} never came"
        _job(proc, launched)
        time.sleep(0.5)
    _job(proc, launched)
    return proc


def _second_launch_is_refused(command: list[str]) -> None:
    """One writer per run directory: a second launch on the same --out is refused, not taken as a resume."""
    started = time.monotonic()
    second = subprocess.run(command, env=verl_env(), capture_output=True, text=True, timeout=TIMEOUT)
    print(f"second launch refused after {time.monotonic() - started:.0f} s")
    assert second.returncode == 2 and "another writer is using it" in second.stderr, second.stderr[-3000:]


def _kill_after_step_1(command: list[str], run_dir: Path, log) -> tuple[dict[int, psutil.Process], str, float]:
    """Leg 1: the launch, a second one refused beside it, SIGKILL once step 1 is committed (telemetry) and
    checkpointed (verl). The job's processes, its marker and when it was killed."""
    launched: dict[int, psutil.Process] = {}
    proc = subprocess.Popen(command, env=verl_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        # The launcher holds the run directory first (then starts Ray, verl, ...).
        proc = _until(lambda: holder_of(run_dir) is not None, proc, command, log, launched, "the lock")
        _second_launch_is_refused(command)
        proc = _until(lambda: (run_dir / "scalars" / "step-000001.parquet").exists()
                      and (run_dir / "verl" / "latest_checkpointed_iteration.txt").exists(),
                      proc, command, log, launched, "step 1")  # its poll: the second launch left it running
        driver = next(p for p in launched.values() if "verl.trainer.main_ppo" in " ".join(p.cmdline()))
        marker = driver.environ()["DHPO_SUITE_VERL_RUN"]
        proc.kill()
        killed = time.monotonic()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return launched, marker, killed


def _last_step(run_dir: Path) -> int:
    """The last committed telemetry step (0 before the first); read through RunReader, which a compaction of
    the step files cannot fool."""
    with contextlib.suppress(Exception):  # a run being written: no step yet, or a file replaced while read
        return max(RunReader(run_dir).steps(), default=0)
    return 0


def _sigterm_after_a_new_step(command: list[str], run_dir: Path, log, after: int) -> dict[int, psutil.Process]:
    """Leg 2: the resumed launch gets SIGTERM once it has committed a step past `after`; the job's processes."""
    launched: dict[int, psutil.Process] = {}
    proc = subprocess.Popen(command, env=verl_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        proc = _until(lambda: _last_step(run_dir) > after, proc, command, log, launched, f"a step after {after}")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
    return launched


# Room for the steps the killed job trains on until the reaper's grace (GRACE_SECONDS, 30 s) ends it: a CPU
# step of this job takes >= 2 s, so at most ~15 (seen: 0 alone, 2 and 7 on a busy machine).
STOPPED_RUN_STEPS = 30


@pytest.mark.timeout(4 * TIMEOUT)  # a launch killed after step 1, then its resume to a new step, on a busy machine
def test_sigkill_then_sigterm_end_every_process_and_resume_continues(tmp_path, tiny_model_dir, data_dir):
    """One grpo job stopped both ways. `kill -9` of `dhpo-suite train` (or the OOM killer) after step 1: within
    60 s no process of the job is left (verl's driver, Ray and its workers used to train on under PID 1) and the
    manifest is not left `running`. Until its driver has unwound (SIGINT, then the reaper's grace) the job may
    commit a step or two more: k steps in all. A relaunch with --resume continues from verl's checkpoint and gets
    SIGTERM once it has committed a step past k: `interrupted`, every process it started gone, steps 1 to k + 1
    (or more) once each, none missing. While the first launch runs, a second on the same --out is refused."""
    run_dir = tmp_path / "grpo"
    command = [*_command("grpo", STOPPED_RUN_STEPS, run_dir, data_dir, tiny_model_dir), "trainer.save_freq=1"]
    with open(tmp_path / "launch.log", "w") as log:
        launched, marker, killed = _kill_after_step_1(command, run_dir, log)
    psutil.wait_procs(list(launched.values()), timeout=60)
    print(f"{len(launched)} processes of the job, ended {time.monotonic() - killed:.0f} s after the kill")
    assert len(launched) > 5 and not _alive(launched)  # the reaper, verl's driver, Ray's processes, workers
    assert not _marked(marker)
    m = read_manifest(run_dir)
    assert m.status == "failed" and "the launcher" in m.error and "ended without closing the run" in m.error

    killed_at = _last_step(run_dir)
    print(f"the killed job committed steps 1-{killed_at}")
    assert 1 <= killed_at < STOPPED_RUN_STEPS, "the killed job trained to the end: nothing left to resume"

    with open(tmp_path / "resume.log", "w") as log:
        launched = _sigterm_after_a_new_step([*command, "--resume"], run_dir, log, after=killed_at)
    assert len(launched) > 5 and not _alive(launched)
    m = read_manifest(run_dir)
    assert m.status == "interrupted" and "SIGTERM" in m.error and m.algorithm == "grpo"
    reader = RunReader(run_dir)
    last = reader.steps()[-1]
    assert killed_at < last < STOPPED_RUN_STEPS  # the resumed launch trained, and SIGTERM stopped it before the end
    scalars = reader.scalars()
    assert list(scalars["step"]) == list(range(1, last + 1))  # one row each: none redone, none missing
    row = scalars.iloc[-1]
    assert row["responses/count"] == 4 and math.isfinite(row["reward/mean"])
    assert math.isfinite(row["ratio/token/mean"]) and 0 <= row["clip/token/binding"] <= 1
    assert math.isfinite(row["entropy/mean"]) and row["entropy/mean"] > 0  # a baseline logs entropy too


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
