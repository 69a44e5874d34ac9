"""dhpo_suite.grading: answer extraction, normalisation and math-verify in sandboxed workers."""
