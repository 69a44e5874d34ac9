"""Load Plotly.js (and the widgets of the chart pages) in the browser while the first page is being read, so
the first chart page opens warm.

Streamlit imports its Plotly component (Plotly.js: ~1.5 s of browser CPU here) lazily, with the first chart of a
browser session, which made the first visit of a chart page take 2-3 s. A 1-pixel iframe asks the parent page
to import that same module URL once the first page's script has finished and the browser is idle; the module map
then holds it and the chart page's own import resolves at once; a throw-away chart drawn off screen three times
then compiles Plotly's drawing code and gets it optimised. It is rendered on every run, not once per session: a
click that reruns the app before the first iframe has executed would otherwise lose the preload (seen in the
browser test). The iframe stays mounted while its HTML is unchanged, and the parent page imports the chunk once. Best
effort: with another Streamlit build (no such chunk, no such script tag) nothing happens.

Then, when the browser is idle again, the same is done for the lazily loaded modules of the widgets the chart
pages add (WIDGET_CHUNKS: sliders, the legend's HTML and the CSV button on Dynamics; number box, select box,
segmented control and radio on Entropy collapse; the table on Sweep), which a page's first visit otherwise
fetches, compiles and evaluates."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import streamlit as st

__all__ = ["plotly_chunk", "widget_chunks", "preload_plotly", "preload_script", "WIDGET_CHUNKS"]

WIDGET_CHUNKS = ("Slider", "rehype-raw", "NumberInput", "Selectbox", "ButtonGroup", "Radio", "DownloadButton",
                 "Table")
"""Streamlit's element modules (file name before the build hash) that the Runs page does not load and the
chart pages use: found in the browser's requests on each page's first visit (benchmarks/dashboard.py)."""


def _chunk(name: str) -> str | None:
    """File name of Streamlit's `name` module (hashed per build), None if this build has none."""
    return min((p.name for p in (Path(st.__file__).parent / "static/static/js").glob(f"{name}.*.js")), default=None)


@lru_cache(maxsize=1)
def plotly_chunk() -> str | None:
    return _chunk("PlotlyChart")


@lru_cache(maxsize=1)
def widget_chunks() -> tuple[str, ...]:
    """File names of the WIDGET_CHUNKS modules in this Streamlit build (those it has)."""
    return tuple(c for c in map(_chunk, WIDGET_CHUNKS) if c is not None)


WARM_DRAW = (
    "() => { const P = window.Plotly; if (!P || !P.newPlot) return;"
    " let left = 3;"
    " const x = Array.from({length: 300}, (_, i) => i), y = x.map(Math.sin), z = x.map(Math.cos);"
    " const once = () => { const d = document.createElement('div');"
    " d.style.cssText = 'position:fixed;left:-5000px;top:0;width:600px;height:320px;visibility:hidden';"
    " document.body.appendChild(d);"
    " const done = (ok) => { try { P.purge(d); } catch (e) {} d.remove();"
    " if (ok && --left > 0) idle(once, {timeout: 2000}); else window.__dhpoPlotlyWarm = ok; };"
    " P.newPlot(d, [{x, y: z, mode: 'lines', line: {width: 0}, showlegend: false},"
    " {x, y, mode: 'lines', fill: 'tonexty', line: {width: 0}}, {x, y, mode: 'lines', name: 'a'},"
    " {x, y: z, mode: 'lines', name: 'b', line: {dash: 'dot'}}],"
    " {title: {text: 'warm-up'}, height: 320, legend: {orientation: 'h', y: -0.25}})"
    ".then(() => done(true), () => done(false)); }; once(); }"
)
"""Draws a throw-away chart off screen once Plotly.js is loaded, three times, each when the browser is idle:
the first real chart page then finds Plotly's drawing code compiled and run often enough to be optimised
(benchmarks/dashboard.py: Dynamics' first visit 1.06 → 0.88 s with one draw, together with the one-call
figures of figures/curves.py; three draws took the chart pages' first visits a further 0.12-0.30 s down, side
by side). Sets window.__dhpoPlotlyWarm after the last. Runs inside preload_script's code, whose `idle` it
uses."""


SETTLE_MS = 500
"""The page's script must have finished this long before the preload starts (see SETTLED)."""

SETTLED = (
    "const settled = (f) => { let since = null; const t = setInterval(() => {"
    " const app = document.querySelector('[data-testid=\"stApp\"]');"
    " const state = app && app.getAttribute('data-test-script-state');"
    " const now = performance.now();"
    " if (state && state !== 'notRunning') since = null; else if (since === null) since = now;"
    f" else if (now - since >= {SETTLE_MS}) {{ clearInterval(t); f(); }} }}, 100); }};"
)
"""`settled(f)` calls f once the app's script has not been running for SETTLE_MS (checked every 0.1 s; at once
when the page has no such attribute, as with another Streamlit build). Importing and compiling Plotly.js costs
~1.5 s of browser CPU: started at the browser's first idle moment, it could run while the first page was still
being drawn (between the script's messages); waiting moved ~2 s of browser CPU out of the first page's window
(benchmarks/RESULTS.md, issue 30, session 14)."""


def preload_script(chunk: str, widgets: tuple[str, ...] = ()) -> str:
    """HTML for the component iframe: evaluated in the parent page (same origin), so the imports land in the
    module map of Streamlit's own page. The URLs are built from the page's index script, which also works when
    the app is served under a path prefix. Plotly first (and its warm-up chart), then, at the next idle time,
    the `widgets` modules; window.__dhpoWidgetsLoaded counts those imported."""
    code = (
        "if (!window.__dhpoPlotlyPreload) { window.__dhpoPlotlyPreload = true;"
        "const s = document.querySelector('script[type=\"module\"][src*=\"/static/js/index.\"]');"
        "const idle = window.requestIdleCallback || ((f) => setTimeout(f, 300));" + SETTLED +
        "if (s) { const base = s.src.replace(/[^/]*$/, '');"
        f" const widgets = () => Promise.all({json.dumps(list(widgets))}.map((c) => import(base + c)"
        ".then(() => 1, () => 0))).then((ok) => { window.__dhpoWidgetsLoaded = ok.reduce((a, b) => a + b, 0); });"
        f" settled(() => idle(() => import(base + {json.dumps(chunk)}).then(" + WARM_DRAW + ")"
        ".catch(() => {}).then(() => idle(widgets, {timeout: 2000})), {timeout: 2000})); } }"
    )
    return f"<script>try {{ window.parent.eval({json.dumps(code)}); }} catch (e) {{}}</script>"


def preload_plotly() -> None:
    """Preload Plotly.js in the background (a 1-pixel iframe in the sidebar; the page imports it once)."""
    chunk = plotly_chunk()
    if chunk is not None:
        with st.sidebar:
            st.iframe(preload_script(chunk, widget_chunks()), height=1)  # an HTML string: same origin
