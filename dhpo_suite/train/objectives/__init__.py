"""The objective library: DHPO and every baseline as short pure-torch functions, chosen by name.

No I/O, no backend imports: the embedded trainer, the verl plugin and the telemetry all call this.
"""

from dhpo_suite.train.objectives import losses as _losses  # noqa: F401  (registers the objectives)
from dhpo_suite.train.objectives.advantages import group_advantages
from dhpo_suite.train.objectives.aggregation import AGG_MODES, PAPER_AGG_MODE, aggregate
from dhpo_suite.train.objectives.output import Branch, ObjectiveOutput
from dhpo_suite.train.objectives.registry import Objective, get_objective, objective_names

OBJECTIVES: tuple[str, ...] = objective_names()

__all__ = ["AGG_MODES", "OBJECTIVES", "PAPER_AGG_MODE", "Branch", "Objective", "ObjectiveOutput", "aggregate",
           "get_objective", "group_advantages"]
