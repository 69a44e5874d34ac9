"""Load Plotly.js in the browser while the first page is being read, so the first chart page opens warm.

Streamlit imports its Plotly component (Plotly.js: ~1.5 s of browser CPU here) lazily, with the first chart of a
browser session, which made the first visit of a chart page take 2-3 s. A zero-height component asks the
parent page to import that same module URL when the browser is idle; the module map then holds it and the
chart page's own import resolves at once; one throw-away chart drawn off screen then compiles Plotly's drawing
code. It is rendered on every run, not once per session: a click that reruns the app before the first iframe
has executed would otherwise lose the preload (seen in the browser test). The iframe stays mounted while its
HTML is unchanged, and the parent page imports the chunk once. Best effort: with another Streamlit build (no
such chunk, no such script tag) nothing happens."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import streamlit as st
import streamlit.components.v1 as components

__all__ = ["plotly_chunk", "preload_plotly", "preload_script"]


@lru_cache(maxsize=1)
def plotly_chunk() -> str | None:
    """File name of Streamlit's Plotly component chunk (hashed per build), None if this build has none."""
    folder = Path(st.__file__).parent / "static" / "static" / "js"
    found = sorted(p.name for p in folder.glob("PlotlyChart.*.js"))
    return found[0] if found else None


WARM_DRAW = (
    "() => { const P = window.Plotly; if (!P || !P.newPlot) return;"
    " const d = document.createElement('div');"
    " d.style.cssText = 'position:fixed;left:-5000px;top:0;width:600px;height:320px;visibility:hidden';"
    " document.body.appendChild(d);"
    " const x = Array.from({length: 300}, (_, i) => i), y = x.map(Math.sin), z = x.map(Math.cos);"
    " const done = (ok) => { try { P.purge(d); } catch (e) {} d.remove(); window.__dhpoPlotlyWarm = ok; };"
    " P.newPlot(d, [{x, y: z, mode: 'lines', line: {width: 0}, showlegend: false},"
    " {x, y, mode: 'lines', fill: 'tonexty', line: {width: 0}}, {x, y, mode: 'lines', name: 'a'},"
    " {x, y: z, mode: 'lines', name: 'b', line: {dash: 'dot'}}],"
    " {title: {text: 'warm-up'}, height: 320, legend: {orientation: 'h', y: -0.25}})"
    ".then(() => done(true), () => done(false)); }"
)
"""Draws one throw-away chart off screen once Plotly.js is loaded: the first real chart page then finds
Plotly's drawing code compiled (benchmarks/dashboard.py: Dynamics' first visit 1.06 → 0.88 s together with
the one-call figures of figures/curves.py). Sets window.__dhpoPlotlyWarm."""


def preload_script(chunk: str) -> str:
    """HTML for the component iframe: evaluated in the parent page (same origin), so the import lands in the
    module map of Streamlit's own page. The URL is built from the page's index script, which also works when
    the app is served under a path prefix."""
    code = (
        "if (!window.__dhpoPlotlyPreload) { window.__dhpoPlotlyPreload = true;"
        "const s = document.querySelector('script[type=\"module\"][src*=\"/static/js/index.\"]');"
        f"if (s) {{ const url = s.src.replace(/[^/]*$/, {json.dumps(chunk)});"
        " (window.requestIdleCallback || ((f) => setTimeout(f, 300)))(() => import(url).then(" + WARM_DRAW + ")"
        ".catch(() => {}), {timeout: 2000}); } }"
    )
    return f"<script>try {{ window.parent.eval({json.dumps(code)}); }} catch (e) {{}}</script>"


def preload_plotly() -> None:
    """Preload Plotly.js in the background (a zero-height iframe in the sidebar; the page imports it once)."""
    chunk = plotly_chunk()
    if chunk is not None:
        with st.sidebar:
            components.html(preload_script(chunk), height=0)
