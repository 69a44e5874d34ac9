"""The first page's floor: what Streamlit itself needs to show one table, beside the dashboard's first page.

    .venv/bin/python benchmarks/dashboard_floor.py [--steps 1000] [--runs-dir DIR] [--repeats 4]

Issue 30 asks for the first page in ≤ 3 s. Most of that time is Streamlit's own start in a fresh browser (its
JavaScript bundle fetched, compiled and run, the session opened), which no page of ours can remove. This script
measures it: a bare Streamlit app (a title and a 2 × 27 table, as the Runs page's) and the dashboard over the two
synthetic 1000-step runs of benchmarks/dashboard.py, each started fresh and opened in a fresh headless Chromium at
1280×800, alternating (ABBA), `--repeats` times each, with benchmarks/dashboard.py's definition of usable (the
script finished, the table and every chart drawn). It prints each open's wall seconds (server CPU + browser CPU)
and the best and median per app: the dashboard's first page minus the floor is the part that is ours.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dashboard import (CHROMIUM_ARGS, Meter, abba, free_port, healthy, make_runs, start,  # benchmarks/dashboard.py
                       usable)

BARE_APP = """import numpy as np, pandas as pd, streamlit as st
st.set_page_config(layout="wide")
st.title("Runs")
st.dataframe(pd.DataFrame(np.random.default_rng(0).random((2, 27)), columns=[f"c{i}" for i in range(27)]))
"""


def start_bare(folder: Path) -> tuple[subprocess.Popen, str]:
    """`streamlit run` of BARE_APP on a free port, answering its health check."""
    app = folder / "bare_app.py"
    app.write_text(BARE_APP)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(app), "--server.headless", "true",
                             "--server.port", str(port), "--browser.gatherUsageStats", "false"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://localhost:{port}"
    healthy(proc, url, "bare Streamlit app")
    return proc, url


def first_page(kind: str, root: Path, folder: Path) -> tuple[float, float, float]:
    """(wall, server CPU, browser CPU) of opening `kind`'s first page in a fresh browser."""
    from playwright.sync_api import sync_playwright

    proc, url = start_bare(folder) if kind == "bare Streamlit" else start(root)[:2]
    meter = Meter(proc.pid)
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})

            def open_first() -> float:
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
                return usable(page, t0)

            meter.measure(kind, open_first)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return meter.rows[kind]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--runs-dir", type=Path, default=None, help="reuse/keep generated runs here")
    ap.add_argument("--repeats", type=int, default=4)
    args = ap.parse_args()
    base = args.runs_dir or Path(tempfile.mkdtemp(prefix="dash-floor-"))
    root = make_runs(base / f"steps-{args.steps}", args.steps)
    kinds = ["bare Streamlit", "dashboard"]
    opens: dict[str, list] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as folder:
        for i in range(args.repeats):
            for kind in abba(i, kinds):
                time.sleep(2)  # the previous browser and server gone
                opens[kind].append(first_page(kind, root, Path(folder)))
    print("\nfirst page usable, seconds: wall (server CPU + browser CPU), fresh server and browser each\n")
    print("| app | opens, in order | best | median |\n|---|---|---|---|")
    for kind, rows in opens.items():
        walls = [w for w, _, _ in rows]
        print(f"| {kind} | {'; '.join(f'{w:.2f} ({s:.2f} + {b:.2f})' for w, s, b in rows)} | {min(walls):.2f} | "
              f"{statistics.median(walls):.2f} |")


if __name__ == "__main__":
    main()
