"""Supervised warm-start: teach the randomly initialised tiny model the task's answer format.

RL needs a policy that is sometimes right (a group whose G rewards are all 0 has zero advantage, eq. 1).
So the tiny model is first trained with cross-entropy on reference solutions until its sampled accuracy
(at the run's temperature) on held-out problems reaches `target` - deliberately not much more, so RL has room.
The result is cached as an HF directory (built once, reused by every run with the same recipe).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

import torch

from dhpo_suite.models import tiny
from dhpo_suite.models.cache_entry import built_once
from dhpo_suite.models.tiny import build_tiny_model
from dhpo_suite.train.embedded.rollout import encode_prompts

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from dhpo_suite.tasks import Task

__all__ = ["SFT_RECIPE", "supervised_batch", "sft_warm_start", "warm_started_tiny_model"]

SFT_RECIPE: dict[str, Any] = dict(lr=3e-3, batch_size=32, check_every=25, pool=1500, version=1)


def supervised_batch(tokenizer: PreTrainedTokenizerBase, task: Task,
                     problems: list[dict[str, Any]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, labels), each (B, L): chat prompt (labels -100) then solution + eos."""
    prompts = encode_prompts(tokenizer, [task.messages(p) for p in problems])
    answers = [tokenizer(p["solution"] + tokenizer.eos_token, add_special_tokens=False)["input_ids"] for p in problems]
    rows = [a + b for a, b in zip(prompts, answers)]
    width, pad = max(map(len, rows)), tokenizer.pad_token_id
    ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
    labels = torch.tensor([[-100] * len(a) + b + [-100] * (width - len(a) - len(b)) for a, b in zip(prompts, answers)])
    return ids, mask, labels


def sft_warm_start(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, task: Task, *, target: float,
                   max_steps: int, seed: int, accuracy: Callable[[PreTrainedModel], float],
                   on_check: Callable[[int, float, float], None] | None = None,
                   ) -> tuple[int, float]:
    """Train in place until accuracy(model) >= target (checked every `check_every` steps) or max_steps.

    Returns (steps taken, last accuracy). `accuracy` samples held-out problems and grades them.
    """
    r = SFT_RECIPE
    problems = task.make_problems(r["pool"], seed=seed, split="train")
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=r["lr"], weight_decay=0.0)
    model.train()
    acc, step = accuracy(model), 0
    while acc < target and step < max_steps:
        idx = torch.randint(len(problems), (r["batch_size"],), generator=gen).tolist()
        ids, mask, labels = supervised_batch(tokenizer, task, [problems[i] for i in idx])
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % r["check_every"] == 0:
            acc = accuracy(model)
            if on_check is not None:
                on_check(step, float(loss.detach()), acc)
    return step, acc


def _recipe_key(task_name: str, target: float, max_steps: int, seed: int, stop_test: dict[str, Any]) -> str:
    """The cache key: the recipe, the model shape, and what the stop test measures (a warm-start stopped by
    accuracy at another temperature or token budget is another model)."""
    spec = dict(SFT_RECIPE, task=task_name, target=target, max_steps=max_steps, seed=seed, shape=tiny.TINY_SHAPE,
                vocab=tiny.VOCAB_SIZE, tiny_version=tiny.VERSION, stop_test=stop_test)
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def warm_started_tiny_model(cache: Path, task: Task, *, target: float, max_steps: int, seed: int,
                            accuracy_fn: Callable[[PreTrainedModel, PreTrainedTokenizerBase], float],
                            stop_test: dict[str, Any], log: Callable[[str], None] = print) -> Path:
    """The cached warm-started tiny model for (task, target, seed, stop test), built on first use. Returns its dir.

    `accuracy_fn(model, tokenizer) -> float`; `stop_test`: the facts it depends on (sampling temperature,
    token budget, problems, seeds), part of the cache key. Built in a temp dir and renamed into place (atomic): a run
    killed during the build leaves no half-built cache entry. Processes asking for the same entry at once wait
    for one builder (a file lock) instead of each building it into the same temp dir.
    """
    final = Path(cache) / f"tiny-{task.name}-sft-{_recipe_key(task.name, target, max_steps, seed, stop_test)}"
    return built_once(final, "sft.json", lambda tmp: _build(tmp, final, task, target=target, max_steps=max_steps,
                                                            seed=seed, accuracy_fn=accuracy_fn,
                                                            stop_test=stop_test, log=log))


def _build(tmp: Path, final: Path, task: Task, *, target: float, max_steps: int, seed: int,
           accuracy_fn: Callable[[PreTrainedModel, PreTrainedTokenizerBase], float], stop_test: dict[str, Any],
           log: Callable[[str], None]) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    build_tiny_model(tmp, seed=seed)
    tokenizer = AutoTokenizer.from_pretrained(tmp)
    model = AutoModelForCausalLM.from_pretrained(tmp)
    log(f"warm-start: supervised training of the tiny model on {task.name} until {target:.0%} accuracy "
        f"(once; cached in {final})")
    steps, acc = sft_warm_start(model, tokenizer, task, target=target, max_steps=max_steps, seed=seed,
                                accuracy=lambda m: accuracy_fn(m, tokenizer),
                                on_check=lambda s, loss, a: log(f"  sft step {s}: loss {loss:.3f}, accuracy {a:.0%}"))
    model.save_pretrained(tmp)
    (tmp / "sft.json").write_text(json.dumps({"steps": steps, "accuracy": acc, "task": task.name, "seed": seed,
                                              "target": target, "recipe": SFT_RECIPE, "stop_test": stop_test},
                                             indent=1))
    log(f"warm-start: done after {steps} steps, accuracy {acc:.0%}")
