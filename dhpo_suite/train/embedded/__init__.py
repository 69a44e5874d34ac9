"""The embedded CPU trainer: RL with any objective of the library on a local HF causal LM.

    from dhpo_suite.train.embedded import TrainConfig, train
    result = train(TrainConfig(algo="dhpo-e", steps=40))      # -> TrainResult(run_dir, ...)
"""

from dhpo_suite.train.embedded.config import ConfigError, TrainConfig, cache_dir
from dhpo_suite.train.embedded.loop import TrainResult, train

__all__ = ["ConfigError", "TrainConfig", "TrainResult", "cache_dir", "train"]
