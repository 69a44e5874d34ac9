"""Runs: every run under the runs directory with its manifest facts; the sidebar picks runs to compare."""

import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import controls, data

ctx = controls.context()
st.title("Runs")
st.caption("Pick runs to compare in the sidebar; every page overlays the picked runs.")


@st.fragment(run_every=ctx.refresh)
def runs_list() -> None:
    table = data.runs_table(ctx.root)
    shown = table.drop(columns=["path", "problems", "error"])
    shown["last_update"] = pd.to_datetime(shown["last_update"], unit="s")
    stale = [r for r in shown.index if shown.at[r, "status"] == "running" and controls.is_stale(table.loc[r])]
    shown.loc[stale, "status"] = "running (no step for 10 min: killed?)"
    st.dataframe(
        shown.style.apply(lambda col: ["font-weight: bold" if r in ctx.selected else "" for r in col.index]),
        column_config={"last_update": st.column_config.DatetimeColumn("last update", format="HH:mm:ss"),
                       "steps": st.column_config.NumberColumn("steps", help="committed steps")},
        key="runs_table",
    )
    for run in ctx.selected:
        row = table.loc[run]
        if row["status"] in ("failed", "invalid") and isinstance(row["error"], str):
            st.error(f"{run}: {row['error']}")
        controls.show_problems(row["problems"] if isinstance(row["problems"], list) else [], f"files of {run}")


runs_list()
