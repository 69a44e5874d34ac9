"""The embedded CPU trainer: RL with any objective of the library on a local HF causal LM.

    from dhpo_suite.train.embedded import TrainConfig, train
    result = train(TrainConfig(algo="dhpo-e", steps=40))      # -> TrainResult(run_dir, ...)
"""

from typing import Any

from dhpo_suite.train.embedded.config import ConfigError, TrainConfig, cache_dir

__all__ = ["ConfigError", "TrainConfig", "TrainResult", "cache_dir", "train"]


def __getattr__(name: str) -> Any:
    # The loop pulls torch and transformers (seconds); load it on first use so that importing the config
    # (the CLI's --help) stays fast.
    if name in ("TrainResult", "train"):
        from dhpo_suite.train.embedded import loop

        return getattr(loop, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
