"""What the real verl launches share (test_launch.py: our launcher; test_plain_verl.py: `python -m
verl.trainer.main_ppo`): the problems, the smallest run that is still verl's, and a launch run to its end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dhpo_suite.runs import RunReader
from dhpo_suite.testing.load import scaled
from dhpo_suite.train.verl_backend.reward import compute_score

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


def ray_start_failed(log: Path) -> bool:
    """The launch died because Ray's node did not start in time (on a busy machine): worth one retry."""
    return RAY_START_FAILED in log.read_text(errors="replace")


def verl_env() -> dict[str, str]:
    """A CPU user's environment: verl on the CPU platform (cpu_platform.py)."""
    return {**os.environ, "VERL_PLATFORM": "cpu", "PYTHONUNBUFFERED": "1"}


def prepare_data(root: Path) -> Path:
    """PROBLEMS as `dhpo-suite data prepare` writes them for verl: 2 training problems, 1 held out."""
    src = root / "problems.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "data", "prepare", str(src), "--out", str(root / "data"),
                    "--val-size", "1"], check=True, capture_output=True, timeout=300)
    return root / "data"


def run_to_end(command: list[str], log: Path, cwd: Path) -> int:
    """Run a launch to its end (stdout and stderr into `log`); its exit code. Once more if Ray itself did not
    start in time."""
    for _ in range(2):
        with open(log, "w") as f:
            code = subprocess.run(command, env=verl_env(), stdout=f, stderr=subprocess.STDOUT, timeout=TIMEOUT,
                                  cwd=cwd).returncode
        if code == 0 or not ray_start_failed(log):
            break
    return code


def assert_rewards_are_the_graders(run_dir: Path, model_dir: Path, steps: list[int]) -> None:
    """Each recorded response's reward is what the project's grader says of its decoded text (verl's reward
    loop decodes without special tokens and calls reward.compute_score)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    reader = RunReader(run_dir)
    for step in steps:
        samples = reader.samples(step)
        assert len(samples) == 4
        for _, s in samples.iterrows():
            text = tok.decode(list(s["token_id"]), skip_special_tokens=True)
            assert s["reward"] == compute_score("problems", text, "5")["score"], text
