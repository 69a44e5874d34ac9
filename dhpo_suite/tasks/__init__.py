"""Verifiable training tasks: problems with gold answers graded by `dhpo_suite.grading`."""
