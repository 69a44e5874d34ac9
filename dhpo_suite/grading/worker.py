"""The grader's worker process: grades one item at a time. Model text is parsed only in here.

Protocol on a duplex pipe: the worker first sends ("ready", pid, site_ok) or ("failed", traceback);
then it answers each (job_id, op, payload) with (job_id, result) and exits on None or EOF; while grading
it first sends ("extracted", job_id, answer, answer_source, answer_rule), which a timeout verdict carries.
ops: "grade" → `check.grade_one(response, golds, bench)`; "info" → the antlr4 runtime it really uses,
its CPU seconds so far and a raw math-verify probe (`198` against `\\boxed{198\\%}`, which 4.9.3
fails and 4.13.2 passes).
The parent enforces the wall-clock limit by killing the process; an address-space limit turns a
runaway sympy computation (e.g. 10^(10^10)) into a MemoryError instead of swapping the machine.
"""

from __future__ import annotations

import os
import resource
import time
import traceback

__all__ = ["serve"]


def serve(conn, memory_mb: int) -> None:
    """Worker entry point (multiprocessing target)."""
    try:
        _limit_memory(memory_mb)
        from dhpo_suite.grading import runtime

        site_ok = runtime.activate()
        from dhpo_suite.grading import check

        check.warm_up()
        conn.send(("ready", os.getpid(), site_ok))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("failed", traceback.format_exc()))
        return
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        if message is None:
            return
        job_id, op, payload = message
        conn.send((job_id, _run(op, payload, lambda *e: conn.send(("extracted", job_id, *e)))))


def _run(op: str, payload, notify):
    from dhpo_suite.grading import check, runtime

    try:
        if op == "grade":
            return check.grade_one(*payload, notify=notify)
        if op == "info":
            return {**runtime.runtime_info(), "probe_198_percent": _probe(),
                    "cpu_s": time.process_time()}
        raise ValueError(f"unknown worker op {op!r}")
    except Exception as err:  # MemoryError and RecursionError included: the worker stays usable
        text = f"{type(err).__name__}: {err}"
        return False, None, "error", f"grading raised {text[:300]}"


def _probe() -> bool:
    """Raw math-verify (no normalisation of ours): does `\\boxed{198\\%}` parse and match 198?"""
    from math_verify import LatexExtractionConfig, parse, verify

    config = [LatexExtractionConfig()]
    gold = parse("$198$", extraction_config=config, parsing_timeout=None)
    pred = parse("\\boxed{198\\%}", extraction_config=config, parsing_timeout=None)
    return bool(verify(gold, pred, timeout_seconds=None))


def _limit_memory(memory_mb: int) -> None:
    if memory_mb <= 0:
        return
    limit = memory_mb * 2**20
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
