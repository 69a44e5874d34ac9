"""dhpo_suite.grading: answer extraction, normalisation and math-verify in sandboxed worker processes.

    >>> from dhpo_suite.grading import GraderPool, grade
    >>> grade("... so the answer is \\\\boxed{\\\\frac{1}{2}}", "0.5").correct
    True
    >>> with GraderPool(workers=2, timeout=5.0) as pool:
    ...     verdicts = pool.grade_many([(response, gold, "math500") for response, gold in pairs])

One grader serves the evaluator and both trainers' rewards. See docs/grading.md.
"""

from dhpo_suite.grading.api import grade
from dhpo_suite.grading.extract import extract_answer
from dhpo_suite.grading.pool import GraderPool
from dhpo_suite.grading.verdict import Verdict

__all__ = ["GraderPool", "Verdict", "extract_answer", "grade"]
