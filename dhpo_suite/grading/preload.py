"""Imported once by the multiprocessing forkserver (never by the parent process).

It selects the grader's antlr4 4.13.2 and imports and warms math-verify, so every worker forked from
the server starts in milliseconds with the right runtime already loaded. A failure here is not
fatal: each worker repeats these steps at start-up and reports any error to the parent.
"""

try:
    from dhpo_suite.grading import runtime

    runtime.activate()
    from dhpo_suite.grading import check

    check.warm_up()
except Exception:  # noqa: BLE001 - re-raised by the worker's own start-up (see worker.serve)
    pass
