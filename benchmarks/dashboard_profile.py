"""Where the browser's time goes when a dashboard page is opened: a Chromium trace of one page switch, summed.

    .venv/bin/python benchmarks/dashboard_profile.py [--steps 1000] [--page Dynamics] [--repeats 3]

Writes the two synthetic runs of benchmarks/dashboard.py, starts the dashboard headless, opens the first page,
then for each repeat opens `--page` from another page under Chromium's tracing (devtools.timeline and V8's
sampling profiler) and reports, per browser thread, the time in each kind of work (script, style, layout,
paint, raster, ...) and the JavaScript self time by script file (plotly.js vs Streamlit's bundle). The median
over repeats is printed; the first open of the page is the cold one and is shown separately.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from dashboard import CHROMIUM_ARGS, goto_page, make_runs, start, usable  # benchmarks/dashboard.py

KINDS = {  # trace event name -> kind of work (top-level events of the renderer's threads)
    "FunctionCall": "script", "EvaluateScript": "script", "v8.compile": "script", "TimerFire": "script",
    "FireAnimationFrame": "script", "EventDispatch": "script", "RunMicrotasks": "script",
    "v8.callFunction": "script", "V8.GC_SCAVENGER": "gc", "MajorGC": "gc", "MinorGC": "gc",
    "UpdateLayoutTree": "style", "RecalculateStyles": "style", "ParseAuthorStyleSheet": "style",
    "Layout": "layout", "PrePaint": "paint", "Paint": "paint", "Layerize": "paint", "UpdateLayer": "paint",
    "CompositeLayers": "composite", "Commit": "composite", "RasterTask": "raster", "ParseHTML": "parse",
    "HitTest": "other",
}


def summarise(trace: dict) -> tuple[dict[str, float], dict[str, float]]:
    """(ms per kind of work on the renderer's threads, JS self ms per script file) from a Chromium trace."""
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
               if e.get("ph") == "M" and e.get("name") == "thread_name"}
    kinds: dict[str, float] = defaultdict(float)
    open_until: dict[tuple, float] = {}
    for e in sorted((e for e in events if e.get("ph") == "X" and "dur" in e), key=lambda e: e["ts"]):
        key = (e["pid"], e["tid"])
        kind = KINDS.get(e["name"])
        if kind is None or e["ts"] < open_until.get(key, 0):  # nested inside a counted event: counted already
            continue
        open_until[key] = e["ts"] + e["dur"]
        kinds[f"{threads.get(key, '?')}: {kind}"] += e["dur"] / 1000
    scripts: dict[str, float] = defaultdict(float)
    nodes: dict[int, str] = {}
    for e in events:  # V8's sampling profiler: ProfileChunk events carry nodes and (sample, time delta) pairs
        if e.get("name") != "ProfileChunk":
            continue
        data = e["args"]["data"].get("cpuProfile", {})
        for n in data.get("nodes", []):
            url = n["callFrame"].get("url") or f"({n['callFrame'].get('functionName') or 'program'})"
            nodes[n["id"]] = url.rsplit("/", 1)[-1][:60]
        for sample, delta in zip(data.get("samples", []), e["args"]["data"].get("timeDeltas", [])):
            scripts[nodes.get(sample, "?")] += delta / 1000
    return dict(kinds), dict(scripts)


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--page", default="Dynamics")
    ap.add_argument("--via", default="Runs", help="the page opened between repeats")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = make_runs(Path(tempfile.mkdtemp(prefix="dash-prof-")) / f"runs-{args.steps}", args.steps)
    proc, url, _ = start(root)
    results = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            t0 = time.perf_counter()
            page.goto(url)
            page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
            usable(page, t0)
            page.wait_for_timeout(2000)
            for _ in range(args.repeats):
                browser.start_tracing(page=page, categories=[
                    "devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute",
                    "disabled-by-default-v8.cpu_profiler"])
                wall = goto_page(page, args.page)
                trace = json.loads(browser.stop_tracing())
                results.append((wall, *summarise(trace)))
                goto_page(page, args.via)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    for label, rows in (("cold (first open)", results[:1]), (f"warm (median of {len(results) - 1})", results[1:])):
        if not rows:
            continue
        print(f"\n## {args.page}, {label}: wall {statistics.median(r[0] for r in rows):.2f} s")
        for title, index in (("ms per kind of work (renderer threads)", 1), ("JS self ms per script", 2)):
            keys = {k for r in rows for k in r[index]}
            table = sorted(((statistics.median(r[index].get(k, 0.0) for r in rows), k) for k in keys), reverse=True)
            print(f"{title}: " + "; ".join(f"{k} {ms:.0f}" for ms, k in table[:12] if ms >= 5))


if __name__ == "__main__":
    main()
