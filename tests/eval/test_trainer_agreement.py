"""One truth: the evaluator on a trained checkpoint's training task agrees with the trainer's held-out reward.

A 2-step embedded run from the warm-started tiny model (the trainer's default, cached), checkpoint and held-out
reward at each step; then `dhpo-suite eval --run RUN --bench arithmetic --samples 4` as a user runs it, which
evaluates each checkpoint in its own process (`eval --model CKPT ...`). The trainer's number is external to the
evaluator: HF `generate` + the grader on `eval_prompts` = 128 problems, one sample each; the evaluator's is vLLM
on the same 128 problems, 4 samples each. They must agree within sampling noise (3.5 standard errors of the
difference of two binomial means).
"""

import json
import math
import subprocess
import sys

import pytest

from dhpo_suite.runs import eval_results as er

SAMPLES = 4


@pytest.fixture(scope="module")
def trained_run(tmp_path_factory):
    from dhpo_suite.grading import GraderPool
    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import TrainConfig, train
    from dhpo_suite.train.embedded.run_setup import resolve_model_dir, sft_accuracy_fn

    cfg = TrainConfig()
    with GraderPool(workers=1) as pool:  # the default run's warm-started tiny model (cached after the first build)
        warm = resolve_model_dir(cfg, get_task(cfg.task), sft_accuracy_fn(cfg, get_task(cfg.task), pool), log=print)
    out = tmp_path_factory.mktemp("agree") / "run"
    cfg = TrainConfig(model=str(warm), steps=2, prompts_per_step=8, out=str(out), checkpoint_every=1, eval_every=1)
    return train(cfg, show_progress=False, log=lambda m: None)


def _heldout_by_step(run_dir) -> dict[int, float]:
    from dhpo_suite.runs import RunReader

    frame = RunReader(run_dir).scalars()
    rows = frame[["step", "eval/heldout_reward"]].dropna()
    return {int(s): float(r) for s, r in zip(rows["step"], rows["eval/heldout_reward"])}


@pytest.mark.slow
def test_eval_of_each_checkpoint_matches_the_trainers_held_out_reward(trained_run):
    from transformers import AutoTokenizer

    from dhpo_suite.tasks import get_task
    from dhpo_suite.train.embedded import TrainConfig

    run = trained_run.run_dir
    trainer = _heldout_by_step(run)
    assert set(trainer) >= {1, 2}
    proc = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "eval", "--run", str(run), "--bench", "arithmetic",
                           "--samples", str(SAMPLES), "--grader-workers", "1"], capture_output=True, text=True,
                          timeout=550)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stderr.count("(own process)") == 2  # a fresh engine process per checkpoint
    assert "step 1" in proc.stdout and "step 2" in proc.stdout and "arithmetic" in proc.stdout
    assert not [line for line in proc.stdout.splitlines() if "INFO" in line or "WARNING" in line]  # logs: stderr
    table = (run / "evals" / "accuracy.csv").read_text().splitlines()  # accuracy vs step, with its standard error
    assert table[0].startswith("step,bench,metric,value,se,") and [r.split(",")[:3] for r in table[1:]] == \
        [["1", "arithmetic", f"avg@{SAMPLES}"], ["2", "arithmetic", f"avg@{SAMPLES}"]]

    task = get_task("arithmetic")
    heldout = task.make_problems(TrainConfig().eval_prompts, seed=0, split="test")  # the trainer's held-out set
    for step in (1, 2):
        results = er.checkpoint_eval_dir(run, step)
        metrics = json.loads((results / er.SUMMARY).read_text())["benchmarks"]["arithmetic"]
        records = er.read_samples(er.samples_path(results, "arithmetic")).records
        tok = AutoTokenizer.from_pretrained(run / "checkpoints" / f"step-{step:06d}")
        prompts = {p["id"]: tok.apply_chat_template(task.messages(p), tokenize=False, add_generation_prompt=True)
                   for p in heldout}
        assert {(r["problem_id"], r["prompt"]) for r in records} == set(prompts.items())
        assert len(records) == len(heldout) * SAMPLES and metrics["n_problems"] == len(heldout)
        ours, theirs = metrics[f"avg@{SAMPLES}"], trainer[step]
        n_ours, n_theirs = len(heldout) * SAMPLES, len(heldout)
        p = (ours * n_ours + theirs * n_theirs) / (n_ours + n_theirs)
        se = math.sqrt(max(p * (1 - p), 0.01) * (1 / n_ours + 1 / n_theirs))
        print(f"step {step}: dhpo-suite eval avg@{SAMPLES} {ours:.3f}, trainer held-out {theirs:.3f}, se {se:.3f}")
        assert abs(ours - theirs) <= 3.5 * se, f"step {step}: eval {ours:.3f} vs trainer {theirs:.3f} (se {se:.3f})"
