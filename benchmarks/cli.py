"""CLI start-up: wall time of `dhpo-suite [COMMAND] --help` in a fresh interpreter, and the import time of
`dhpo_suite.cli` alone (`python -X importtime`), with the heavy modules (torch, pandas, ...) it loaded.

Each figure is the median of --repeat runs. Load average is printed: other agents share the 2 cores.

    .venv/bin/python benchmarks/cli.py [--repeat 5] [--src DIR]

--src DIR measures another version first on the path, e.g. the one before lazy imports:
`git archive 8e23fc5 dhpo_suite | tar -x -C DIR`.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time

COMMANDS = ([], ["train"], ["eval"], ["dashboard"], ["grade"], ["data", "prepare"])
HEAVY = ("torch", "transformers", "pandas", "numpy", "pyarrow", "vllm", "verl", "streamlit")


def help_seconds(argv: list[str], repeat: int, where: dict) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "dhpo_suite.cli", *argv, "--help"], check=True,
                       stdout=subprocess.DEVNULL, **where)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def import_seconds(repeat: int, where: dict) -> tuple[float, list[str]]:
    """Cumulative import time of dhpo_suite.cli (from -X importtime) and the heavy modules it loaded."""
    times, loaded = [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import dhpo_suite.cli"],
                             capture_output=True, text=True, check=True, **where).stderr
        match = re.search(r"^import time:\s+\d+ \|\s+(\d+) \| dhpo_suite\.cli$", out, re.M)
        times.append(int(match.group(1)) / 1e6)
        names = {line.rsplit("|", 1)[1].strip() for line in out.splitlines() if "|" in line}
        loaded = sorted(m for m in HEAVY if m in names)
    return statistics.median(times), loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--src", help="a directory holding another dhpo_suite package to measure instead")
    args = parser.parse_args()
    # `python -m` puts the working directory first on the path: run there, so that --src is what is imported.
    where = dict(env={**os.environ, "PYTHONPATH": args.src}, cwd=args.src) if args.src else {}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of {args.repeat}")
    seconds, loaded = import_seconds(args.repeat, where)
    print(f"import dhpo_suite.cli: {seconds * 1000:.0f} ms; heavy modules loaded: {loaded or 'none'}")
    for argv in COMMANDS:
        print(f"dhpo-suite {' '.join([*argv, '--help'])}: {help_seconds(argv, args.repeat, where):.2f} s")


if __name__ == "__main__":
    main()
