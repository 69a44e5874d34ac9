"""Dashboard speed and memory in the browser: `dhpo-suite dashboard` driven by Playwright in Debian's Chromium.

    .venv/bin/python benchmarks/dashboard.py [--steps 1000] [--runs-dir DIR] [--repeats 2]

Writes two synthetic runs (dhpo-e collapsing at 60 %, grpo) of `--steps` steps and, side by side, two of
steps/10, with full telemetry and a checkpoint evaluation every 100 steps, then for each size starts the
dashboard headless and measures, in one browser session:
- first page usable: navigation start → the page's script finished and every chart drawn; then a pause
  (--pause, default 2 s: reading the runs table; the app preloads Plotly.js in the background meanwhile);
- switching page (each page, first visit = cold caches, then a second tour = warm);
- switching run on Clipping and outliers (cold: a run not looked at yet);
- server memory (RSS) after the tours and after stepping through 40 different steps on Clipping and outliers
  (per-step data is loaded on demand into bounded caches);
- a step change on Responses (slider, mean of 20: the step's coloured responses with prompts and legend).
Each measure reports wall seconds and CPU seconds (server, browser); with --repeats the sizes alternate and
the least disturbed tour (smallest wall time) is kept per action. The ratio column (big / small run) shows
what grows with the run's length. Targets: first page ≤ 3 s, switching ≤ 1 s, memory bounded.

    .venv/bin/python benchmarks/dashboard.py --against DIR [--steps 1000] [--repeats 2]

measures another version side by side instead (DIR holds its package: `git archive REV dhpo_suite | tar -x -C
DIR`): at --steps only, the tours alternate between DIR's dashboard and this checkout's over the same runs, and
the table gives each action's server and browser CPU seconds for both, with the ratios new/old. On a shared
machine the CPU seconds are the comparable figures; wall times include waiting for a core.

The benchmark's two runs have one seed each, so their Sweep page bootstraps nothing; `--sweep-seeds K` (default
3, 0 skips) also writes a sweep of 2 algorithms × K seeds × --steps steps (scalars only) and measures, in this
process, the Sweep page's statistics: as each rerun of the page computed them before (compare's summary, paired
differences and bands at every step of the four curves) and through dashboard/sweep_stats.py (first view, then
a rerun: cached per sweep version, bands bootstrapped at the drawn steps only).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np
import psutil

from dhpo_suite.dashboard.registry import PAGES
from dhpo_suite.runs import eval_results as er
from dhpo_suite.testing.synthetic_runs import write_synthetic_run

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def write_evals(run: Path, steps: int) -> None:
    """A small checkpoint evaluation every 100 steps (2 benchmarks × 10 problems × 4 samples)."""
    for step in range(100, steps + 1, 100):
        folder = er.checkpoint_eval_dir(run, step)
        benches = {}
        for bench in ("aime24", "math500"):
            recs = [dict(bench=bench, problem_id=f"{bench}-{p}", sample=s, prompt=f"Problem {p}", response="\\boxed{1}",
                         n_tokens=100, finish_reason="stop", gold=["1"], extracted="1",
                         correct=(p + s + step // 100) % 3 == 0, status="ok", reason="match")
                    for p in range(10) for s in range(4)]
            with er.SampleWriter(er.samples_path(folder, bench)) as w:
                w.write_batch(recs)
            benches[bench] = {"headline": "avg@4", "avg@4": sum(r["correct"] for r in recs) / len(recs)}
        avg = sum(b["avg@4"] for b in benches.values()) / 2
        er.write_json_atomic(folder / er.SUMMARY, {"results_version": 1, "benchmarks": benches, "AVG": avg})


def make_runs(root: Path, steps: int) -> Path:
    if not (root / "grpo" / "manifest.json").exists():
        print(f"writing 2 synthetic runs of {steps} steps under {root} ...", flush=True)
        write_synthetic_run(root / "dhpo-e", steps=steps, algo="dhpo-e", collapse_at=int(0.6 * steps))
        write_synthetic_run(root / "grpo", steps=steps, algo="grpo", seed=1)
        for run in ("dhpo-e", "grpo"):
            write_evals(root / run, steps)
    return root


PAUSE_S = 2.0
"""Seconds spent on the first page before the first click (--pause; the app preloads Plotly.js meanwhile)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(root: Path, src: Path | None = None) -> tuple[subprocess.Popen, str, float]:
    """Start the dashboard over `root`: this checkout's, or the dhpo_suite package under `src` (`python -m`
    puts the working directory first on the path, ahead of the editable install)."""
    port = free_port()
    t0 = time.perf_counter()
    where = dict(cwd=src, env={**os.environ, "PYTHONPATH": str(src)}) if src else {}
    proc = subprocess.Popen([sys.executable, "-m", "dhpo_suite.cli", "dashboard", str(root.resolve()),
                             "--headless", "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, **where)
    url = f"http://localhost:{port}"
    healthy(proc, url, "dashboard")
    return proc, url, time.perf_counter() - t0


def healthy(proc: subprocess.Popen, url: str, what: str) -> None:
    """Wait (≤ 60 s) until the Streamlit server at `url` answers its health check; kill it if it never does."""
    for _ in range(600):
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError(f"{what} did not start")


USABLE = """async ([settle, limit]) => {
    // Polled inside the page (a query every 50 ms): polling over the DevTools protocol costs ~8 ms of browser
    // and driver CPU per poll, which the CPU columns would count as the page's.
    const state = () => {
        const app = document.querySelector('[data-testid="stApp"]');
        const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
        const tables = document.querySelectorAll('[data-testid="stDataFrame"], .rollout').length;
        const drawn = charts.filter(c => c.querySelector('.main-svg')).length;
        const done = app && app.getAttribute('data-test-script-state') === 'notRunning'
            && charts.length === drawn && charts.length + tables > 0;
        return done ? `${charts.length}/${drawn}/${tables}` : null;
    };
    const start = performance.now();
    let last = null, since = start;
    while (performance.now() - start < limit) {
        const key = state(), now = performance.now();
        if (key === null || key !== last) { since = now; last = key; }
        else if (now - since >= settle) return now - since;  // ms since the page became usable
        await new Promise(r => setTimeout(r, 50));
    }
    return null;
}"""


def usable(page, t0: float, settle: float = 0.4) -> float:
    """Seconds from t0 until the page is usable: the script has finished, at least one chart, table or
    coloured response is on the page and every chart has drawn, unchanged for `settle` seconds (elements
    arrive progressively; the settle time is not counted)."""
    ago = page.evaluate(USABLE, [settle * 1000, 60_000])
    if ago is None:
        raise TimeoutError("page did not become usable within 60 s")
    return time.perf_counter() - ago / 1000 - t0


def goto_page(page, title: str) -> float:
    """Click the page's navigation link; seconds until its title shows and it is usable."""
    t0 = time.perf_counter()
    page.locator('[data-testid="stSidebarNav"] a').filter(has_text=title).click()
    page.locator("h1").filter(has_text=title).wait_for(timeout=60_000)
    return usable(page, t0)


def pick(page, label: str, option: str) -> float:
    """Choose `option` in the selectbox labelled `label`; seconds until usable again."""
    t0 = time.perf_counter()
    page.get_by_label(label, exact=True).first.click()
    page.get_by_role("option", name=option, exact=True).click()
    page.wait_for_timeout(100)  # let the rerun start before waiting for it to end
    return usable(page, t0)


def _is_driver(p: psutil.Process) -> bool:
    try:
        return p.name().startswith("node")
    except psutil.Error:
        return False


class Meter:
    """Wall time and CPU seconds of the server process and of the browser (every process this script started
    except the server and Playwright's node driver, which only relays the measuring): CPU time is what an idle
    machine would need; wall time here includes waiting for the CPU when other work shares it."""

    def __init__(self, server_pid: int):
        self.server = psutil.Process(server_pid)
        self.rows: dict[str, tuple[float, float, float]] = {}

    def cpu(self) -> tuple[float, float]:
        def used(p: psutil.Process) -> float:
            try:
                t = p.cpu_times()
                return t.user + t.system + t.children_user + t.children_system
            except psutil.Error:
                return 0.0
        others = [p for p in psutil.Process().children(recursive=True)
                  if p.pid != self.server.pid and not _is_driver(p)]
        return used(self.server), sum(used(p) for p in others)

    def measure(self, name: str, action) -> None:
        s0, b0 = self.cpu()
        wall = action()
        s1, b1 = self.cpu()
        self.rows[name] = (wall, s1 - s0, b1 - b0)


def tour(root: Path, pause: float = PAUSE_S, src: Path | None = None
         ) -> tuple[dict[str, tuple[float, float, float]], dict[str, float]]:
    from playwright.sync_api import sync_playwright

    proc, url, startup = start(root, src)
    meter, mem = Meter(proc.pid), {"server start (s)": startup}
    titles = [p.title for p in PAGES]
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})  # issue 30's screen

            def first() -> float:
                t0 = time.perf_counter()
                page.goto(url)
                page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
                return usable(page, t0)

            meter.measure("first page usable", first)
            page.wait_for_timeout(pause * 1000)  # a user reads the runs table before opening a chart page
            for title in titles[1:]:
                meter.measure(f"{title} (cold)", lambda: goto_page(page, title))
            for title in [*titles[1:], titles[0]]:
                meter.measure(f"{title} (warm)", lambda: goto_page(page, title))
            goto_page(page, "Clipping and outliers")
            meter.measure("switch run (cold)", lambda: pick(page, "Run", "grpo"))
            meter.measure("switch run (warm)", lambda: pick(page, "Run", "dhpo-e"))
            mem["RSS after tours (MiB)"] = psutil.Process(proc.pid).memory_info().rss / 2**20
            slider = page.locator('[data-testid="stSlider"]').filter(has_text="Step").last.get_by_role("slider")
            slider.focus()

            def steps40() -> float:
                total = 0.0
                for _ in range(40):
                    t0 = time.perf_counter()
                    page.keyboard.press("ArrowLeft")  # the previous committed step: not loaded yet
                    page.wait_for_timeout(100)  # let the rerun start
                    total += usable(page, t0)
                return total / 40

            meter.measure("step change (mean of 40)", steps40)
            wall, s, b = meter.rows["step change (mean of 40)"]
            meter.rows["step change (mean of 40)"] = (wall, s / 40, b / 40)
            mem["RSS after 40 more steps (MiB)"] = psutil.Process(proc.pid).memory_info().rss / 2**20
            goto_page(page, "Responses")
            page.get_by_role("slider").last.focus()

            def responses20() -> float:
                total = 0.0
                for _ in range(20):
                    t0 = time.perf_counter()
                    page.keyboard.press("ArrowLeft")
                    page.wait_for_timeout(100)
                    total += usable(page, t0)
                return total / 20

            meter.measure("Responses step change (mean of 20)", responses20)
            wall, s, b = meter.rows["Responses step change (mean of 20)"]
            meter.rows["Responses step change (mean of 20)"] = (wall, s / 20, b / 20)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return meter.rows, mem


def abba(i: int, pair: list) -> list:
    """Round i's order of a pair: AB, BA, AB, ... (neither always goes first: an order effect would read as a
    difference between the two)."""
    return pair if i % 2 == 0 else pair[::-1]


def best(tours: list) -> tuple[dict, dict]:
    """Per action, the tour with the smallest wall time (the least disturbed by other work on the machine);
    memory from the last tour."""
    rows = {k: min((t[0][k] for t in tours), key=lambda r: r[0]) for k in tours[0][0]}
    return rows, tours[-1][1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--runs-dir", type=Path, default=None, help="reuse/keep generated runs here")
    ap.add_argument("--repeats", type=int, default=2, help="tours per size, alternating sizes; best wall kept")
    ap.add_argument("--pause", type=float, default=PAUSE_S, help="seconds on the first page before the first click")
    ap.add_argument("--sweep-seeds", type=int, default=3, help="seeds per algorithm of the sweep-statistics measure")
    ap.add_argument("--against", type=Path, default=None,
                    help="a directory holding another version's dhpo_suite package: measured side by side")
    args = ap.parse_args()
    base = args.runs_dir or Path(tempfile.mkdtemp(prefix="dash-bench-"))
    if args.against:
        return against(args.against.resolve(), make_runs(base / f"steps-{args.steps}", args.steps), args)
    roots = {size: make_runs(base / f"steps-{size}", size) for size in (args.steps // 10, args.steps)}
    results: dict[int, list] = {size: [] for size in roots}
    for i in range(args.repeats):  # alternate sizes so both see the same background load
        for size, root in abba(i, list(roots.items())):
            results[size].append(tour(root, args.pause))
    small, small_mem = best(results[args.steps // 10])
    big, big_mem = best(results[args.steps])
    n, m = args.steps // 10, args.steps
    print(f"\nseconds: wall (server CPU + browser CPU)\n\n| action | {n} steps | {m} steps | wall ratio {m}/{n} |")
    print("|---|---|---|---|")
    for key, (wall, s, b) in big.items():
        w0, s0, b0 = small[key]
        print(f"| {key} | {w0:.2f} ({s0:.2f} + {b0:.2f}) | {wall:.2f} ({s:.2f} + {b:.2f}) | {wall / w0:.2f} |")
    for key, value in big_mem.items():
        print(f"| {key} | {small_mem[key]:.1f} | {value:.1f} | {value / small_mem[key]:.2f} |")
    if args.sweep_seeds:
        sweep_statistics(make_sweep(base / f"sweep-{args.sweep_seeds}x{args.steps}", args.sweep_seeds, args.steps))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (2 cores)")


def make_sweep(root: Path, seeds: int, steps: int) -> Path:
    """grpo and dhpo-e × `seeds` seeds of `steps` steps: the scalars the Sweep page reads (entropy, length,
    reward per step, held-out reward every 10 steps), noisy per seed."""
    from dhpo_suite.runs import Manifest, RunWriter, StepRecord

    if (root / "done").exists():
        return root
    print(f"writing a sweep of 2 × {seeds} runs of {steps} steps under {root} ...", flush=True)
    for algo in ("grpo", "dhpo-e"):
        for seed in range(seeds):
            rng = np.random.default_rng(seed)
            w = RunWriter(root / f"{algo}-s{seed}", Manifest(algorithm=algo, seed=seed, backend="embedded"),
                          fsync=False)
            for step in range(1, steps + 1):
                s = {"entropy/mean": 1.0 / (1 + step / 300) + 0.05 * rng.standard_normal(),
                     "length/mean": 200 + 20 * rng.standard_normal(), "reward/mean": rng.random()}
                if step == 1:
                    s["eval/heldout_reward_initial"] = 0.1
                if step % 10 == 0:
                    s["eval/heldout_reward"] = 0.1 + step / (10 * steps) + 0.02 * rng.standard_normal()
                w.write_step(StepRecord(step, s))
            w.close()
    (root / "done").touch()
    return root


def sweep_statistics(root: Path) -> None:
    """CPU seconds of the Sweep page's statistics: as each rerun computed them before, and now (first view,
    rerun)."""
    from dhpo_suite.dashboard import data, sweep_stats
    from dhpo_suite.science import compare as cmp

    curves = ("eval/heldout_reward", "entropy/mean", "length/mean", "reward/mean")

    def before() -> None:
        metrics, scalars, _ = cmp.load_sweep(root)
        cmp.summarize(metrics)
        cmp.paired_differences(metrics, "grpo")
        for metric in curves:
            cmp.curve_bands(scalars, metric)

    def now() -> None:
        table = data.runs_table(str(root))
        version = sweep_stats.selection_version(table, list(table.index))  # every run picked
        metrics = sweep_stats.sweep(version)[0]
        sweep_stats.summary(version)
        sweep_stats.differences(version, "grpo")
        for metric in curves:
            for label in sorted(metrics["label"].unique()):
                sweep_stats.bands(version, metric, label)

    def cpu(action) -> float:
        t0 = time.process_time()
        action()
        return time.process_time() - t0

    old, first, rerun = cpu(before), cpu(now), cpu(now)
    print(f"\nSweep page statistics, {root.name} (CPU s, this process): before, every rerun {old:.2f}; "
          f"now, first view {first:.2f} ({first / old:.2f}×), rerun {rerun:.3f} ({rerun / old:.3f}×)")


def against(src: Path, root: Path, args) -> None:
    """Tours of `src`'s dashboard and of this checkout's over the same runs, alternating; CPU side by side."""
    if not (src / "dhpo_suite" / "dashboard" / "app.py").exists():
        raise SystemExit(f"--against {src}: no dhpo_suite/dashboard/app.py there")
    results: dict[str, list] = {"old": [], "new": []}
    for i in range(args.repeats):
        for name, where in abba(i, [("old", src), ("new", None)]):
            results[name].append(tour(root, args.pause, where))
    (old, old_mem), (new, new_mem) = best(results["old"]), best(results["new"])
    print(f"\n{args.steps} steps; old: {src}, new: this checkout. Seconds: wall (server CPU + browser CPU)\n")
    print("| action | old | new | server CPU new/old | browser CPU new/old |\n|---|---|---|---|---|")
    for key, (wall, s, b) in new.items():
        if key not in old:
            print(f"| {key} | — | {wall:.2f} ({s:.2f} + {b:.2f}) | — | — |")
            continue
        w0, s0, b0 = old[key]
        print(f"| {key} | {w0:.2f} ({s0:.2f} + {b0:.2f}) | {wall:.2f} ({s:.2f} + {b:.2f}) | "
              f"{s / max(s0, 1e-9):.2f} | {b / max(b0, 1e-9):.2f} |")
    for key, value in new_mem.items():
        print(f"| {key} | {old_mem.get(key, float('nan')):.1f} | {value:.1f} | | |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (2 cores)")


if __name__ == "__main__":
    main()
