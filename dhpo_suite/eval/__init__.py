"""dhpo_suite.eval: the paper's evaluation protocol on vLLM (see docs/eval.md).

    >>> from dhpo_suite.eval import Engine, EvalSettings, evaluate
    >>> summary = evaluate(Engine("/models/Qwen3-4B-Base"), ["aime24"], "eval-results/qwen3-4b")
"""

from dhpo_suite.eval.benchmarks import BENCHMARKS, PAPER_BENCHMARKS, DataError, load_problems
from dhpo_suite.eval.engine import Engine, EngineOptions
from dhpo_suite.eval.metrics import METRICS
from dhpo_suite.eval.runner import EvalSettings, evaluate, regrade

__all__ = ["BENCHMARKS", "PAPER_BENCHMARKS", "DataError", "load_problems", "Engine", "EngineOptions", "METRICS",
           "EvalSettings", "evaluate", "regrade"]
