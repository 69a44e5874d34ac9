"""Does the tiny model's warm start reproduce? Its inputs' digests, its first supervised steps, or the whole build.

The SFT warm start (dhpo_suite/train/embedded/sft.py) is where a run's numbers begin. This script prints what it
depends on, so two trees (`PYTHONPATH=OTHER_TREE`) or two machines can be compared line by line (issue 46, item
4: a committed run did not reproduce):

    python benchmarks/warm_start_check.py                      # digests: problems, tiny model, SFT batch, cache key
    python benchmarks/warm_start_check.py --steps 50 --save A.pt               # the first 50 supervised steps
    ATEN_CPU_CAPABILITY=avx2 python benchmarks/warm_start_check.py --steps 50 --against A.pt   # other kernels
    DHPO_SUITE_CACHE=/tmp/c python benchmarks/warm_start_check.py --build      # the whole warm start, its sha256
    python benchmarks/warm_start_check.py --rewards MODEL_DIR     # its held-out and stop-test rewards, this grader

Task and seed as a run's (`--task`, `--seed`); one torch thread, as `dhpo-suite train --threads 1`. Uses only
APIs the tree of 2026-11-26 (5378fc6) has too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from dhpo_suite.grading import GraderPool
from dhpo_suite.models.local import load_model
from dhpo_suite.models.tiny import build_tiny_model
from dhpo_suite.tasks import get_task
from dhpo_suite.train.embedded import run_setup, sft
from dhpo_suite.train.embedded.config import TrainConfig
from dhpo_suite.train.embedded.reward import heldout_reward


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()[:16]


def _weights(w: dict[str, torch.Tensor]) -> str:
    return hashlib.sha256(b"".join(v.numpy().tobytes() for v in w.values())).hexdigest()[:16]


def inputs(cfg: TrainConfig) -> dict[str, str]:
    """Digests of everything the warm start reads before its first step."""
    task, stop = get_task(cfg.task), run_setup.sft_stop_test(cfg, get_task(cfg.task))
    tmp = Path(tempfile.mkdtemp())
    build_tiny_model(tmp, seed=cfg.seed)
    out = {"sft problems": _digest(task.make_problems(sft.SFT_RECIPE["pool"], seed=cfg.seed, split="train")),
           "stop-test problems": _digest(task.make_problems(stop["problems"], seed=stop["problem_seed"], split="test")),
           "held-out problems": _digest(task.make_problems(cfg.eval_prompts, seed=cfg.seed, split="test")),
           **{f"tiny {f.name}": hashlib.sha256(f.read_bytes()).hexdigest()[:16] for f in sorted(tmp.iterdir())},
           "cache key": sft._recipe_key(task.name, cfg.sft_target, cfg.sft_max_steps, cfg.seed, stop)}
    ids, _, labels = sft.supervised_batch(AutoTokenizer.from_pretrained(tmp), task,
                                          task.make_problems(64, seed=cfg.seed, split="train"))
    out["sft batch"] = hashlib.sha256(ids.numpy().tobytes() + labels.numpy().tobytes()).hexdigest()[:16]
    return out


def first_steps(cfg: TrainConfig, steps: int) -> dict[str, torch.Tensor]:
    """The weights after the warm start's first `steps` supervised steps (the stop test never passes)."""
    tmp = Path(tempfile.mkdtemp())
    build_tiny_model(tmp, seed=cfg.seed)
    model = AutoModelForCausalLM.from_pretrained(tmp)
    sft.sft_warm_start(model, AutoTokenizer.from_pretrained(tmp), get_task(cfg.task), target=2.0, max_steps=steps,
                       seed=cfg.seed, accuracy=lambda m: 0.0)
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def build(cfg: TrainConfig) -> Path:
    """The whole warm start, as `dhpo-suite train` builds it, into $DHPO_SUITE_CACHE (reused if there)."""
    task = get_task(cfg.task)
    with GraderPool(workers=cfg.grader_workers, timeout=10.0) as pool:
        return run_setup.resolve_model_dir(cfg, task, run_setup.sft_accuracy_fn(cfg, task, pool), print)


def rewards(cfg: TrainConfig, model_dir: Path) -> dict[str, float]:
    """The run's initial held-out reward (loop.evaluate: seed + 7) and the stop test's accuracy (seed + 11) of the
    model in `model_dir`, graded by the tree's grader."""
    task, stop = get_task(cfg.task), run_setup.sft_stop_test(cfg, get_task(cfg.task))
    model, tokenizer = load_model(model_dir)
    sets = {"held-out reward": (task.make_problems(cfg.eval_prompts, seed=cfg.seed, split="test"), cfg.seed + 7),
            "stop-test accuracy": (task.make_problems(stop["problems"], seed=stop["problem_seed"], split="test"),
                                   stop["sample_seed"])}
    with GraderPool(workers=1, timeout=10.0) as pool:
        return {name: heldout_reward(model, tokenizer, task, problems, pool, max_new_tokens=stop["max_new_tokens"],
                                     temperature=cfg.temperature, seed=seed) for name, (problems, seed) in sets.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python benchmarks/warm_start_check.py", description=__doc__.split("\n")[0])
    p.add_argument("--task", default="arithmetic-chain")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-prompts", type=int, default=512, help="the held-out set's size (its digest)")
    p.add_argument("--steps", type=int, default=0, help="run this many supervised steps; print the weights' digest")
    p.add_argument("--save", type=Path, help="with --steps: save the weights here")
    p.add_argument("--against", type=Path, help="with --steps: count the weights that differ from this file's")
    p.add_argument("--build", action="store_true", help="build the whole warm start; print its weights' sha256")
    p.add_argument("--rewards", type=Path, help="a warm start's directory: its held-out and stop-test rewards")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    cfg = TrainConfig(task=a.task, seed=a.seed, eval_prompts=a.eval_prompts)
    print(f"torch {torch.__version__}, kernels {torch.backends.cpu.get_cpu_capability()}")
    if a.rewards:
        for k, v in rewards(cfg, a.rewards).items():
            print(f"{k}: {v:.4f}")
        return 0
    if a.build:
        d = build(cfg)
        sha = hashlib.sha256((d / "model.safetensors").read_bytes()).hexdigest()
        print(f"warm start {d}: model.safetensors sha256 {sha}")
        return 0
    if not a.steps:
        for k, v in inputs(cfg).items():
            print(f"{k:>28}: {v}")
        return 0
    w = first_steps(cfg, a.steps)
    print(f"after {a.steps} supervised steps: weights {_weights(w)}")
    if a.save:
        torch.save(w, a.save)
    if a.against:
        ref = torch.load(a.against)
        n = sum(int((w[k] != ref[k]).sum()) for k in w)
        print(f"{n} of {sum(v.numel() for v in w.values())} weights differ from {a.against} "
              f"(largest by {max(float((w[k] - ref[k]).abs().max()) for k in w):.3g})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
