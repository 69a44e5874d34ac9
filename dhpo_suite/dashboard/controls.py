"""What every page shares: the runs directory, the run selection (kept across pages), live refresh, the
step-range and smoothing controls, and the list of missing or broken files."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import data

__all__ = ["Context", "context", "step_controls", "show_problems", "is_stale", "RUNS_DIR_ENV", "STALE_AFTER_S"]

RUNS_DIR_ENV = "DHPO_RUNS_DIR"
REFRESH_S = 5.0
STALE_AFTER_S = 600.0
"""A "running" run with no new step for this long is shown as stale (a SIGKILLed run keeps "running")."""
_MAX_DEFAULT = 4


@dataclass
class Context:
    """The page's view of the runs directory: `table` (all runs), `selected` (keys into table, in order)."""

    root: str
    table: pd.DataFrame
    selected: list[str]
    refresh: float | None
    """Seconds between live refreshes (None: nothing selected is running, or auto-refresh is off)."""

    def path(self, run: str) -> str:
        return str(self.table.at[run, "path"])


def _persist() -> None:
    st.session_state["selected_runs"] = st.session_state["_selected_runs"]


def context() -> Context:
    """Read the runs directory and draw the sidebar: runs to compare, auto-refresh. Stops the page (with a
    message) when there are no runs."""
    root = os.environ.get(RUNS_DIR_ENV, "runs")
    if not Path(root).is_dir():
        st.error(f"Runs directory {root} does not exist.")
        st.stop()
    table = data.runs_table(root)
    if table.empty:
        st.info(f"No runs under {root} yet (a run is a folder with manifest.json).")
        st.stop()
    runs = list(table.index)
    valid = [r for r in runs if table.at[r, "status"] != "invalid"]
    default = [r for r in st.session_state.get("selected_runs", valid[:_MAX_DEFAULT]) if r in runs]
    # The widget's own key is dropped when a page without it runs; the plain key survives page switches.
    st.session_state["_selected_runs"] = default
    selected = st.sidebar.multiselect("Runs to compare", runs, key="_selected_runs", on_change=_persist,
                                      help=f"Runs under {root}")
    st.session_state["selected_runs"] = selected
    for run in [r for r in selected if table.at[r, "status"] == "invalid"]:
        st.warning(f"Run {run} cannot be opened: {table.at[run, 'problems'][0]}", icon="⚠️")
    selected = [r for r in selected if table.at[r, "status"] != "invalid"]
    live = st.sidebar.toggle("Auto-refresh running runs", value=True, key="auto_refresh")
    running = [r for r in selected if table.at[r, "status"] == "running" and not is_stale(table.loc[r])]
    refresh = REFRESH_S if live and running else None
    if running:
        st.sidebar.caption(f"Live: {', '.join(running)} " + (f"(every {REFRESH_S:g} s)" if live else "(paused)"))
    st.sidebar.caption(f"Runs directory: `{root}`")
    return Context(root, table, selected, refresh)


def is_stale(row: pd.Series) -> bool:
    """A "running" run whose last step is older than STALE_AFTER_S (a SIGKILLed trainer leaves "running")."""
    last = row.get("last_update")
    return last is not None and pd.notna(last) and time.time() - float(last) > STALE_AFTER_S


def step_controls(max_step: int, key: str, smoothing: bool = True) -> tuple[tuple[int, int], float]:
    """Step range (and smoothing) widgets in one row; returns ((first, last), smoothing α)."""
    left, right = st.columns([3, 1])
    if max_step <= 0:
        return (0, max(max_step, 0)), 0.0
    lo, hi = left.slider("Step range", 0, int(max_step), (0, int(max_step)), key=f"{key}_range")
    alpha = right.slider("Smoothing", 0.0, 0.99, 0.6, 0.01, key=f"{key}_smooth",
                         help="Exponential moving average weight (0: raw values)") if smoothing else 0.0
    # A range that reaches the last step follows new steps of a live run.
    return (lo, 10**12 if hi == max_step else hi), alpha


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
