"""The warm-start cache key covers what its stop test measures: another temperature or token budget is
another warm-started model, never a cache hit."""

from __future__ import annotations

import dataclasses

from dhpo_suite.tasks import get_task
from dhpo_suite.train.embedded import TrainConfig
from dhpo_suite.train.embedded.run_setup import sft_stop_test
from dhpo_suite.train.embedded.sft import _recipe_key


def _key(cfg: TrainConfig) -> str:
    task = get_task(cfg.task)
    return _recipe_key(task.name, cfg.sft_target, cfg.sft_max_steps, cfg.seed, sft_stop_test(cfg, task))


def test_cache_key_follows_the_stop_test():
    base = TrainConfig()
    assert _key(base) == _key(dataclasses.replace(base, steps=base.steps + 5, lr=base.lr / 2))  # RL-only fields
    assert _key(dataclasses.replace(base, temperature=0.7)) != _key(base)
    assert _key(dataclasses.replace(base, max_new_tokens=7)) != _key(base)
    assert _key(dataclasses.replace(base, seed=base.seed + 1)) != _key(base)
