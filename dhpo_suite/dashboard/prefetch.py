"""Build the chart pages' first views in the background while the user reads the page on screen.

A chart page's first visit used to read its runs' files and build its figures while the user waited: 0.2-0.5 s of
the server's CPU before the browser could start drawing (benchmarks/RESULTS.md, issue 30). After every full run
of the app, `schedule` hands the selection to one background thread, which calls the pages' cached view
functions (views.py) with the widgets' defaults: Dynamics' panels, Entropy collapse's verdicts and figure, and
for each selected run (at most MAX_RUNS) Clipping's clip fractions, heatmap and binding summary, and the last
step's outliers and responses. The page then finds them in Streamlit's caches; if it asks before the thread is
done, Streamlit's per-entry lock makes it wait for that build instead of starting a second one.

Runs still being written are left out: their next step changes the cache key, and the trainer needs the CPU. A
selection is prefetched once per version of its runs, whichever session asks. The thread starts DELAY_S after the
page's script has ended, so that it does not compete with the browser drawing the page (on the 2-core benchmark
machine, browser and server share the cores), and it never raises: what it could not build, the page builds and
reports itself. It is not run at a lower OS priority: holding the GIL while descheduled, it would stall the
server's own thread (priority inversion)."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import streamlit as st

from dhpo_suite.dashboard import controls, data, views
from dhpo_suite.science import CollapseRule

__all__ = ["schedule", "schedule_current", "warm", "wait", "MAX_RUNS", "DELAY_S"]

MAX_RUNS = 4
"""Most selected runs whose Clipping views are prefetched (the default selection has at most 4)."""
DELAY_S = 1.0
"""Seconds between the end of the page's script and the prefetch: the browser draws the page meanwhile."""

_log = logging.getLogger(__name__)
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dhpo-prefetch")
_lock = threading.Lock()
_done: set[tuple] = set()
_last: Future | None = None


def schedule(ctx: controls.Context | None) -> None:
    """Prefetch the default views of `ctx`'s selection in the background, unless done already."""
    global _last
    if ctx is None or not ctx.selected:
        return
    key = (ctx.root, views.versions(ctx), tuple(ctx.colors.items()))  # a new run may recolour the others
    with _lock:
        if key in _done:
            return
        if len(_done) > 256:  # keys of old versions: only memory
            _done.clear()
        _done.add(key)
        _last = _pool.submit(_quietly, ctx)


def wait(timeout: float = 60) -> None:
    """Block until the last scheduled prefetch has finished (tests)."""
    if _last is not None:
        _last.result(timeout)


def _quietly(ctx: controls.Context) -> None:
    time.sleep(DELAY_S)
    try:
        warm(ctx)
    except Exception:  # the page will build (and report) whatever failed here
        _log.debug("prefetch failed", exc_info=True)


def warm(ctx: controls.Context) -> None:
    """Build the default first view of each chart page for `ctx`'s selection (see the module docstring)."""
    finished = [r for r in ctx.selected if ctx.table.at[r, "status"] != "running"]
    if finished == ctx.selected:
        views.dynamics_panels(ctx, controls.SMOOTHING, controls.FULL_RANGE, (), False, "step")
        views.collapse_view(ctx, CollapseRule())
    for run in finished[:MAX_RUNS]:
        path = ctx.path(run)
        scalars = data.scalars(path, data.run_version(path))[0]
        steps = [int(s) for s in scalars["step"]]
        if not steps:
            continue
        branches = views.branches(scalars.columns)
        views.clip_view(ctx, run, branches)
        if branches:
            views.heatmap_view(path, steps, controls.FULL_RANGE, branches[0], "all", scalars.columns)
        views.binding_view(path, steps, controls.FULL_RANGE)
        data.outliers(path, steps[-1])
        data.samples(path, steps[-1])


def schedule_current() -> None:
    """schedule() for the context the page just read (controls.context keeps it in the session)."""
    schedule(st.session_state.get(controls.CONTEXT_KEY))
