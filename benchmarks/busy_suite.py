"""The test suite on a busy machine: `make test` (or a pytest selection) beside N busy-loop processes.

    .venv/bin/python benchmarks/busy_suite.py                      # make test beside 2 busy loops (~1 h on 2 cores)
    .venv/bin/python benchmarks/busy_suite.py --hogs 2 -- tests/eval/test_cli.py -k sigkill   # one slow test

A contributor's laptop is not CI: other programs take the cores, and every process the suite starts (vLLM, Ray,
trainers, grader workers) runs several times slower. Tests that wait for something take their limits from the
measured slowdown (dhpo_suite/testing/load.py; tests/conftest.py scales pytest-timeout) or retry Ray's start
once. This script shows whether that holds: it starts `--hogs` processes that spin on a core each (pure Python
busy loops, niced like nothing: the same priority as the suite), measures the slowdown the tests will see, runs
the command, stops the hogs and prints one record (and appends it to `--record FILE` as a JSON line): command,
hogs, cores, load average before and after, measured slowdown, wall time, exit code and pytest's summary line.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _spin(stop) -> None:
    """One busy loop: takes a whole core until `stop` is set (checked every ~10 ms of work)."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _summary(output: str) -> str:
    """pytest's last summary line ('== 3 passed, 1 skipped in 80.1s ==') without the bars; '' if none."""
    lines = [ln for ln in output.splitlines() if re.search(r"\b(passed|failed|error|no tests ran)\b", ln)]
    return lines[-1].strip(" =") if lines else ""


def run(command: list[str], hogs: int) -> dict:
    """Run `command` in the repository root beside `hogs` busy loops; the record described in the module doc."""
    ctx = mp.get_context("spawn")
    stop = ctx.Event()
    procs = [ctx.Process(target=_spin, args=(stop,), daemon=True) for _ in range(hogs)]
    for p in procs:
        p.start()
    try:
        time.sleep(5)  # let the hogs take their cores before measuring
        load_before = os.getloadavg()
        from dhpo_suite.testing.load import slowdown

        factor = slowdown()
        start = time.perf_counter()
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        wall = time.perf_counter() - start
        load_after = os.getloadavg()
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=10)
    sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-2000:])
    return {"when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "command": " ".join(command),
            "hogs": hogs, "cores": os.cpu_count(), "load_before": [round(x, 1) for x in load_before],
            "load_after": [round(x, 1) for x in load_after], "slowdown": round(factor, 2),
            "wall_s": round(wall, 1), "exit_code": proc.returncode, "pytest": _summary(proc.stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hogs", type=int, default=2, help="busy-loop processes beside the suite (default 2)")
    ap.add_argument("--record", type=Path, help="append the record to this file (one JSON object a line)")
    ap.add_argument("pytest_args", nargs="*", help="after --: a pytest selection instead of `make test`")
    args = ap.parse_args()
    if args.hogs < 0:
        ap.error(f"--hogs: must be >= 0, got {args.hogs}")
    command = ([sys.executable, "-m", "pytest", "-q", *args.pytest_args] if args.pytest_args else ["make", "test"])
    record = run(command, args.hogs)
    print(json.dumps(record))
    if args.record:
        with open(args.record, "a") as f:
            f.write(json.dumps(record) + "\n")
    sys.exit(record["exit_code"])


if __name__ == "__main__":
    main()
