"""dhpo_suite.eval: the paper's evaluation protocol on vLLM (see docs/eval.md).

    >>> from dhpo_suite.eval import Engine, EvalSettings, evaluate
    >>> summary = evaluate(Engine("/models/Qwen3-4B-Base"), ["aime24"], "eval-results/qwen3-4b")
"""

from typing import Any

from dhpo_suite.eval.benchmarks import BENCHMARKS, PAPER_BENCHMARKS, DataError, load_problems
from dhpo_suite.eval.engine import Engine, EngineOptions
from dhpo_suite.eval.metrics import METRICS

__all__ = ["BENCHMARKS", "PAPER_BENCHMARKS", "DataError", "load_problems", "Engine", "EngineOptions", "METRICS",
           "EvalSettings", "evaluate", "regrade"]


def __getattr__(name: str) -> Any:
    # The runner pulls the run-directory reader (pandas, numpy); load it on first use so that importing the
    # `eval` command (the CLI's --help) stays fast.
    if name in ("EvalSettings", "evaluate", "regrade"):
        from dhpo_suite.eval import runner

        return getattr(runner, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
