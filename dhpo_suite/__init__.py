"""dhpo-suite: DHPO and its baselines for RLVR — objectives, trainers, evaluator, dashboard."""

__version__ = "0.1.0"
