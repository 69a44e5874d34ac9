"""What drawing the Dynamics page's charts costs the browser, per way of drawing them, side by side.

    .venv/bin/python benchmarks/dashboard_draw.py [--steps 1000] [--repeats 5]

Builds the Dynamics page's figures (dashboard/figures/curves.py: the 7 panels, raw beneath smoothed, drawn as
one figure of subplots by dashboard/figures/grid.py, and the clip fractions) for the two synthetic runs of
benchmarks/dashboard.py, then in one headless Chromium page times `Plotly.newPlot` of all of them (Plotly.js
from the plotly package), for each variant in turn, alternating, median over repeats. The variants change one
thing each, so the table says what each costs: each panel as a figure of its own (the page before issue 30's
grid), the per-panel linear/log buttons, the raw curves, WebGL traces. Streamlit's own cost (React, the page
script) is not in it: benchmarks/dashboard.py measures the whole page.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import tempfile
from pathlib import Path

import pandas as pd
import plotly
import plotly.graph_objects as go

from dashboard import CHROMIUM_ARGS, make_runs  # benchmarks/dashboard.py
from dhpo_suite.dashboard.figures import curves as fig
from dhpo_suite.dashboard.figures.grid import grid
from dhpo_suite.runs import RunReader

PANELS = [("entropy/mean", ("entropy/p10", "entropy/p90"), ()), ("length/mean", None, (("length/p90", "p90"),)),
          ("length/truncated_frac", None, ()), ("reward/mean", None, ()),
          ("w/mean", ("w/p10", "w/p90"), (("w/p50", "p50"),)), ("kl/k3", None, (("kl/k1", "k1"),)),
          ("grad_norm", None, ())]  # the page's (dashboard/app_pages/dynamics.py)


def figures(root: Path, alpha: float = 0.6) -> list[go.Figure]:
    """The 7 panels, each a figure of its own, then the clip fractions."""
    raw = pd.concat([RunReader(root / r).scalars().assign(run=r) for r in ("dhpo-e", "grpo")], ignore_index=True)
    cols = list(raw.columns.drop(["run", "step"]))
    r, f = fig.prepare(raw, cols, 0.0), fig.prepare(raw, cols, alpha)
    colors = fig.run_colors(["dhpo-e", "grpo"])
    out = [fig.line_overlay(f, m, m, band=b, extra=list(e), colors=colors, legend=False, raw=r, smoothing=alpha)
           for m, b, e in PANELS]
    return out + [fig.clip_fractions(f, ("token", "sequence", "mixed"), colors=colors)]


def variants(figs: list[go.Figure]) -> dict[str, list[dict]]:
    base = [json.loads(grid(figs[:7]).to_json()), json.loads(figs[7].to_json())]  # as the page draws them

    def changed(edit) -> list[dict]:
        out = copy.deepcopy(base)
        for d in out:
            edit(d)
        return out

    def no_buttons(d):
        d["layout"].pop("updatemenus", None)

    def no_raw(d):
        d["data"] = [t for t in d["data"] if not str(t.get("name", "")).endswith(" raw")]

    def webgl(d):
        for t in d["data"]:
            if t.get("type") == "scatter" and not t.get("fill"):
                t["type"] = "scattergl"

    def static(d):
        d["config"] = {"staticPlot": True}

    return {"as drawn": base, "each panel its own figure": [json.loads(f.to_json()) for f in figs],
            "no linear/log buttons": changed(no_buttons), "no raw curves": changed(no_raw),
            "WebGL lines": changed(webgl), "no modebar": changed(lambda d: d.update(config={"displayModeBar": False})),
            "static (no interaction)": changed(static)}


DRAW = """async (figs) => {
    document.body.innerHTML = '';
    const t0 = performance.now();
    for (const f of figs) {
        const div = document.createElement('div');
        div.style.width = '600px';
        document.body.appendChild(div);
        await Plotly.newPlot(div, f.data, f.layout, Object.assign({responsive: true}, f.config || {}));
    }
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));  // one frame: painted
    return performance.now() - t0;
}"""


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    root = make_runs(Path(tempfile.mkdtemp(prefix="dash-draw-")) / f"runs-{args.steps}", args.steps)
    cases = variants(figures(root))
    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    times: dict[str, list[float]] = {k: [] for k in cases}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_content("<html><body></body></html>")
        page.add_script_tag(path=str(plotly_js))
        page.evaluate(DRAW, cases["as drawn"])  # warm-up: Plotly's first draw compiles its code
        for _ in range(args.repeats):
            for name, figs in cases.items():
                times[name].append(page.evaluate(DRAW, figs))
        browser.close()
    base = statistics.median(times["as drawn"])
    print(f"Dynamics page's {len(cases['as drawn'])} figures, {args.steps}-step runs, Plotly.js "
          f"{plotly.__version__} (python package), median of {args.repeats}:")
    print("| variant | ms to draw all | ratio to as drawn |\n|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {statistics.median(t):.0f} | {statistics.median(t) / base:.2f} |")


if __name__ == "__main__":
    main()
