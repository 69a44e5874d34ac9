"""What every page shares: the runs directory, the run selection (kept across pages), live refresh, the
step-range and smoothing controls, and the list of missing or broken files."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import data
from dhpo_suite.dashboard.registry import RUNS_DIR_ENV

__all__ = ["Context", "context", "seed_from_url", "parse_range", "parse_float", "step_controls", "step_picker",
           "show_problems", "is_stale", "chips_css", "url_param", "set_url", "RUNS_DIR_ENV", "STALE_AFTER_S",
           "SMOOTHING", "FULL_RANGE", "CONTEXT_KEY"]

REFRESH_S = 5.0
STALE_AFTER_S = 600.0
"""A "running" run with no new step for this long is shown as stale (a SIGKILLed run keeps "running")."""
_MAX_DEFAULT = 4
SMOOTHING = 0.6
"""The smoothing slider's default (EMA weight)."""
CONTEXT_KEY = "_dhpo_context"
"""Session-state key of the last Context a page read."""
FULL_RANGE = (0, 10**12)
"""What step_controls returns for the whole range: its end follows new steps of a live run."""


@dataclass
class Context:
    """The page's view of the runs directory: `table` (all runs), `selected` (keys into table, in order)."""

    root: str
    table: pd.DataFrame
    selected: list[str]
    refresh: float | None
    """Seconds between live refreshes (None: nothing selected is running, or auto-refresh is off)."""
    refresh_all: float | None = None
    """The same for views of every run (the Runs table): None when no run of the directory is running."""

    def path(self, run: str) -> str:
        return str(self.table.at[run, "path"])

    @cached_property
    def colors(self) -> dict[str, str]:
        """One colour per run of the directory (not of the selection), from a stable hash of its path; runs
        claim colours oldest first (start time, then path), so a run added later never recolours another:
        a run keeps its colour on every page, whatever else is selected and while a sweep grows."""
        from dhpo_suite.dashboard.figures.curves import run_colors

        started = self.table["started_at"].map(lambda v: v if isinstance(v, str) and v else "~")
        return run_colors(sorted(self.table.index, key=lambda r: (started[r], r)))


def _persist() -> None:
    st.session_state["selected_runs"] = st.session_state["_selected_runs"]


def seed_from_url(key: str, name: str, parse) -> None:
    """Give widget `key` the value of URL parameter `name` (parsed; None: ignored) when the session has none
    yet: opening a shared link shows the same view (page, runs, range, smoothing, metrics, axes)."""
    text = url_param(name)
    if key in st.session_state or text is None:
        return
    try:
        value = parse(text)
    except ValueError:
        return
    if value is not None:
        st.session_state[key] = value


def parse_range(max_step: int):
    """Parser of a `lo-hi` step range, clamped to [0, max_step]."""
    def parse(text: str) -> tuple[int, int]:
        lo, hi = (int(v) for v in text.split("-", 1))
        lo, hi = max(0, min(lo, max_step)), max(0, min(hi, max_step))
        return (lo, hi) if lo <= hi else (hi, lo)
    return parse


def parse_float(lo: float, hi: float):
    """Parser of a number in [lo, hi]."""
    def parse(text: str) -> float | None:
        v = float(text)
        return v if lo <= v <= hi else None
    return parse


def url_param(name: str) -> str | None:
    """A query parameter of the page's URL (shared views: ?runs=a,b&run=a&step=150&branch=mixed)."""
    return st.query_params.get(name) or None


def set_url(**params) -> None:
    """Write the view's state into the URL (None removes a parameter); unchanged values are not rewritten."""
    for name, value in params.items():
        text = "" if value is None else (",".join(value) if isinstance(value, (list, tuple)) else str(value))
        if not text:
            st.query_params.pop(name, None)
        elif st.query_params.get(name) != text:
            st.query_params[name] = text


def _runs_signature(root: str) -> tuple:
    """The runs under `root` with their status: a change (a new run, a run that ended) redraws the whole page.
    A directory that does not exist (yet) has no runs."""
    if not Path(root).is_dir():
        return ()
    return tuple((str(s.path), None if s.manifest is None else s.manifest.status) for s in data.list_runs(root))


def _watch(root: str, seen: tuple) -> None:
    @st.fragment(run_every=REFRESH_S)
    def watch() -> None:
        if _runs_signature(root) != seen:
            st.rerun(scope="app")

    watch()


def context() -> Context:
    """Read the runs directory and draw the sidebar: runs to compare, auto-refresh. Stops the page (with a
    message) when there are no runs."""
    root = os.environ.get(RUNS_DIR_ENV, "runs")
    if not Path(root).is_dir():
        st.error(f"Runs directory {root} does not exist.")
        _watch(root, ())  # created later with runs in it: they appear without a reload
        st.stop()
    table = data.runs_table(root)
    if table.empty:
        st.info(f"No runs under {root} yet (a run is a folder with manifest.json); they appear here as they start.")
        _watch(root, ())
        st.stop()
    runs = list(table.index)
    valid = [r for r in runs if table.at[r, "status"] != "invalid"]
    from_url = url_param("runs")
    if "selected_runs" not in st.session_state and from_url:  # a shared link: its runs, not the default
        st.session_state["selected_runs"] = [r for r in from_url.split(",") if r in runs]
    _follow(valid)
    default = [r for r in st.session_state.get("selected_runs", valid[:_MAX_DEFAULT]) if r in runs]
    # The widget's own key is dropped when a page without it runs; the plain key survives page switches.
    st.session_state["_selected_runs"] = default
    selected = st.sidebar.multiselect("Runs to compare", runs, key="_selected_runs", on_change=_persist,
                                      help=f"Runs under {root}")
    st.sidebar.toggle("Follow new runs", value=True, key="follow_runs",
                      help="A run that starts in the folder of a picked run (a sweep's next seed) joins the picked "
                           "runs on its own")
    _filters(table.loc[valid])
    st.session_state["selected_runs"] = selected
    set_url(runs=selected)
    for run in [r for r in selected if table.at[r, "status"] == "invalid"]:
        st.warning(f"Run {run} cannot be opened: {table.at[run, 'problems'][0]}", icon="⚠️")
    selected = [r for r in selected if table.at[r, "status"] != "invalid"]
    live = st.sidebar.toggle("Auto-refresh running runs", value=True, key="auto_refresh")
    running = [r for r in selected if table.at[r, "status"] == "running" and not is_stale(table.loc[r])]
    refresh = REFRESH_S if live and running else None
    anywhere = [r for r in valid if table.at[r, "status"] == "running" and not is_stale(table.loc[r])]
    if running:
        st.sidebar.caption(f"Live: {', '.join(running)} " + (f"(every {REFRESH_S:g} s)" if live else "(paused)"))
    st.sidebar.caption(f"Runs directory: `{root}`")
    if st.session_state.get("auto_refresh", True):
        with st.sidebar:
            _watch(root, _runs_signature(root))
    ctx = Context(root, table, selected, refresh, REFRESH_S if live and anywhere else None)
    st.html(chips_css(ctx.colors))
    st.session_state[CONTEXT_KEY] = ctx  # for what runs after the page (prefetch.schedule_current)
    return ctx


def _follow(valid: list[str]) -> None:
    """Runs new to this session (readable ones) whose folder holds a picked run join the picked runs, unless
    "Follow new runs" is off: a sweep's seeds 1-2 appear on the page watched while they start (issue 43)."""
    seen = st.session_state.get("_seen_runs")
    st.session_state["_seen_runs"] = valid
    picked = st.session_state.get("selected_runs")
    if seen is None or picked is None or not st.session_state.get("follow_runs", True):
        return
    folders = {str(Path(r).parent) for r in picked}
    joining = [r for r in valid if r not in seen and r not in picked and str(Path(r).parent) in folders]
    if joining:
        st.session_state["selected_runs"] = [*picked, *joining]


def chips_css(colors: dict[str, str]) -> str:
    """A style sheet giving each picked run's chip in the sidebar its line colour, its name whole (a sweep's
    names differ in their last characters: the seed)."""
    from dhpo_suite.dashboard.figures.curves import text_color

    base = ('[data-testid="stSidebar"] span[data-tag],[data-testid="stSidebar"] span[data-tag]>span[title]'
            "{max-width:none}")
    rules = "".join(f'[data-testid="stSidebar"] span[data-tag][aria-label="{r.replace(chr(34), "")}"]'
                    f"{{background-color:{c};color:{text_color(c)}}}" for r, c in colors.items())
    return f"<style>{base}{rules}</style>"


FILTERS = ("algorithm", "clip", "mixing", "eps_low", "eps_high", "lr", "group_size", "model", "task", "backend",
           "status", "seed")
"""Runs-table columns the sidebar filters by (those whose value differs between runs)."""


def _pick(runs: list[str]) -> None:
    st.session_state["selected_runs"] = runs


def _filters(table: pd.DataFrame) -> None:
    """Filter by setting (W&B's run filters): a value list per setting that differs between runs, and a
    button that picks the runs matching every filter."""
    text = {c: table[c].map(lambda v: "—" if v is None or v != v else str(v)) for c in FILTERS if c in table}
    columns = [c for c, values in text.items() if values.nunique() > 1]
    if not columns:
        return
    with st.sidebar.expander("Filter runs by setting"):
        match = pd.Series(True, index=table.index)
        for c in columns:
            chosen = st.multiselect(c, sorted(text[c].unique()), key=f"filter_{c}", placeholder="any")
            if chosen:
                match &= text[c].isin(chosen)
        runs = list(table.index[match])
        st.button(f"Pick the {len(runs)} matching runs", key="filter_pick", on_click=_pick, args=(runs,),
                  disabled=not runs)


def is_stale(row: pd.Series) -> bool:
    """A "running" run whose last step is older than STALE_AFTER_S (a SIGKILLed trainer leaves "running")."""
    last = row.get("last_update")
    return last is not None and pd.notna(last) and time.time() - float(last) > STALE_AFTER_S


def step_controls(max_step: int, key: str, smoothing: bool = True, where=None) -> tuple[tuple[int, int], float]:
    """Step range (and smoothing) widgets in one row (or in `where`, two containers); returns ((first, last),
    smoothing α)."""
    left, right = where if where is not None else st.columns([3, 1])
    if max_step <= 0:
        return (0, max(max_step, 0)), 0.0
    lo, hi = left.slider("Step range", 0, int(max_step), (0, int(max_step)), key=f"{key}_range")
    alpha = right.slider("Smoothing", 0.0, 0.99, SMOOTHING, 0.01, key=f"{key}_smooth",
                         help="Exponential moving average weight (0: raw values)") if smoothing else 0.0
    # A range that reaches the last step follows new steps of a live run.
    return (lo, FULL_RANGE[1] if hi == max_step else hi), alpha


def _sync(src: str, dst: str) -> None:
    st.session_state[dst] = st.session_state[src]


def step_picker(steps: list[int], key: str, label: str = "Step") -> int:
    """A committed step, chosen by typing its number or with a slider (kept in sync, and in the URL as `step`).
    A typed step that was not logged snaps to the nearest logged one."""
    if not steps:
        raise ValueError("step_picker needs at least one step")
    box, slide = f"{key}_box", f"{key}_slider"
    wanted = st.session_state.get(box)
    if wanted is None:
        from_url = url_param("step")
        wanted = int(from_url) if from_url and from_url.lstrip("-").isdigit() else steps[-1]
    step = min(steps, key=lambda s: (abs(s - int(wanted)), s))
    st.session_state[box] = st.session_state[slide] = step
    left, right = st.columns([1, 4])
    left.number_input(label, min_value=steps[0], max_value=steps[-1], step=1, key=box,
                      on_change=_sync, args=(box, slide), help="Type a step number (Enter), or use the slider")
    right.select_slider(f"{label} (slider)", steps, key=slide, on_change=_sync, args=(slide, box),
                        label_visibility="hidden")
    set_url(step=step)
    return step


def show_problems(problems: list[str], what: str = "files") -> None:
    """Say which files were missing or broken (the page still shows everything else)."""
    problems = list(dict.fromkeys(p for p in problems if p))
    if not problems:
        return
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    st.warning(f"Shown without {len(problems)} {what} that are missing or unreadable: {problems[0]}{more}", icon="⚠️")
    if len(problems) > 1:
        with st.expander(f"All {len(problems)} missing or unreadable {what}"):
            st.code("\n".join(problems[:100]) + ("\n…" if len(problems) > 100 else ""), language=None)
