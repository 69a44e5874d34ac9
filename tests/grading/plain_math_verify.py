"""Plain math-verify 0.9.0, as researchers call it, for side-by-side accuracy (run as a child process).

stdin: JSON list of [gold, response]; stdout: JSON list of booleans. The gold is read from
`\\boxed{gold}`, the response with math-verify's default extraction (LaTeX and plain expressions),
then `verify(gold, pred)`; an exception counts as "not equivalent". Runs under the grader's antlr4
4.13.2 (`runtime.activate`), so the comparison is with math-verify at its best. It runs in a child
interpreter because the test process must never import math-verify (see test_runtime.py).

    python tests/grading/plain_math_verify.py < pairs.json
"""

from __future__ import annotations

import json
import logging
import sys


def main() -> None:
    from dhpo_suite.grading import runtime

    runtime.activate()
    logging.disable(logging.WARNING)
    from math_verify import parse, verify

    results = []
    for gold, response in json.load(sys.stdin):
        try:
            results.append(bool(verify(parse("\\boxed{" + gold + "}"), parse(response))))
        except Exception:  # noqa: BLE001 - a caller of math-verify counts an error as wrong
            results.append(False)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
