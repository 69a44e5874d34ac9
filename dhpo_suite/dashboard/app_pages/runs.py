"""Runs: every run under the runs directory, sortable, with its settings and summary figures (final reward,
entropy and length, last evaluation, collapse step), and one link per researcher's question."""

import math

import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import controls, data
from dhpo_suite.science import detect_collapse, verdict
from dhpo_suite.dashboard.registry import PAGE_DIR, QUESTIONS

ctx = controls.context()
st.title("Runs")
st.caption("Click a column header to sort. Pick runs to compare in the sidebar; every page overlays the picked "
           "runs, each in the same colour everywhere.")
links = st.columns(2)  # two per row: four in a row clipped the questions at 1280 px
for i, (question, page) in enumerate(QUESTIONS):
    links[i % 2].page_link(str(PAGE_DIR / page), label=question, query_params={"runs": ",".join(ctx.selected)})

# The columns shown by default fit a 1280 px screen beside the sidebar (all 27 ran past its right edge, issue 43);
# the others are one pick away (*More columns*).
SHOWN = ("algorithm", "lr", "seed", "status", "steps", "final reward", "final entropy", "final length",
         "last eval AVG", "collapse")  # the verdict names the collapse step
INTEGERS = ("group_size", "steps", "last_step", "checkpoints", "evals", "seed", "collapse step", "entropy collapse",
            "length collapse")
FINAL = 10  # final values are the mean of the last FINAL logged steps (one step is noisy)


def summaries(table: pd.DataFrame) -> pd.DataFrame:
    """Per run: final reward / entropy / length, last evaluation AVG (%), collapse step."""
    rows = {}
    for run in table.index:
        if table.at[run, "status"] == "invalid":
            continue
        path = str(table.at[run, "path"])
        sc, _ = data.scalars(path, data.run_version(path))
        last = sc.sort_values("step").tail(FINAL) if len(sc) else sc
        final = {f"final {m.split('/')[0]}": float(last[m].mean()) if m in last.columns and len(last) else math.nan
                 for m in ("reward/mean", "entropy/mean", "length/mean")}  # NaN, not None: a float column
        evals, _ = data.eval_summaries(path)
        avg = evals[max(evals)][1].get("AVG") if evals else None
        ix = sc.set_index("step") if len(sc) else sc
        c = detect_collapse(ix.get("entropy/mean", pd.Series(dtype=float)),
                            ix.get("length/mean", pd.Series(dtype=float)))
        rows[run] = {**final, "last eval AVG": math.nan if avg is None else 100 * float(avg), "collapse step": c.step,
                     "entropy collapse": c.entropy.step, "length collapse": c.length.step, "collapse": verdict(c)}
    return pd.DataFrame.from_dict(rows, orient="index")


@st.fragment(run_every=ctx.refresh_all)  # every running run, picked or not
def runs_list() -> None:
    table = data.runs_table(ctx.root)
    shown = table.drop(columns=["path", "problems", "error"]).join(summaries(table))
    shown["last_update"] = pd.to_datetime(shown["last_update"], unit="s")
    stale = [r for r in shown.index if shown.at[r, "status"] == "running" and controls.is_stale(table.loc[r])]
    running = [f"{r} ({table.at[r, 'steps']} steps)" for r in table.index
               if table.at[r, "status"] == "running" and r not in stale]
    st.caption(f"{len(table)} runs under `{ctx.root}` (new runs appear on their own)"
               + (f"; running, refreshed every {controls.REFRESH_S:g} s: {', '.join(running)}" if running else ""))
    shown.loc[stale, "status"] = "running (no step for 10 min: killed?)"
    order = ["name", "algorithm", "clip", "mixing", "eps_low", "eps_high", "lr", "group_size", "status", "steps",
             "final reward", "final entropy", "final length", "last eval AVG", "collapse step", "entropy collapse",
             "length collapse", "collapse", "model", "task",
             "backend", "seed", "checkpoints", "evals", "last_step", "started_at", "last_update"]
    shown = shown[[c for c in order if c in shown.columns]]
    more = st.multiselect("More columns", [c for c in order if c in shown.columns and c not in SHOWN],
                          key="runs_columns", placeholder="More columns: clip, mixing, ε, group size, model, task, …",
                          label_visibility="collapsed")
    counts = [c for c in INTEGERS if c in shown.columns]  # an invalid run's blanks must not turn them into floats
    shown[counts] = shown[counts].apply(lambda col: pd.to_numeric(col, errors="coerce").round().astype("Int64"))
    floats = [c for c in ("lr", "eps_low", "eps_high") if c in shown.columns]  # one no run has: NaN, not None
    shown[floats] = shown[floats].apply(pd.to_numeric, errors="coerce")
    st.dataframe(
        shown.style.apply(lambda col: ["font-weight: bold" if r in ctx.selected else "" for r in col.index]),
        column_config={"last_update": st.column_config.DatetimeColumn("last update", format="HH:mm:ss"),
                       "steps": st.column_config.NumberColumn("steps", help="committed steps"),
                       "final reward": st.column_config.NumberColumn(
                           "reward", format="%.3f", help=f"final reward: mean of the last {FINAL} steps"),
                       "final entropy": st.column_config.NumberColumn(
                           "entropy", format="%.3f", help="final entropy (nats), last steps' mean"),
                       "final length": st.column_config.NumberColumn(
                           "length", format="%.0f", help="final length (tokens), last steps' mean"),
                       "last eval AVG": st.column_config.NumberColumn(
                           "eval AVG", format="%.1f", help="last evaluation's AVG, % (latest checkpoint)"),
                       "collapse step": st.column_config.NumberColumn(
                           "collapsed at", format="%d",
                           help="collapse step: both entropy and length have collapsed (collapse rule, docs)"),
                       "entropy collapse": st.column_config.NumberColumn(format="%d", help="entropy onset"),
                       "length collapse": st.column_config.NumberColumn(format="%d", help="length onset"),
                       "collapse": st.column_config.TextColumn(
                           width="medium", help="the verdict, as on the Entropy collapse page"),
                       "lr": st.column_config.NumberColumn(format="%.2e"),
                       "eps_low": st.column_config.NumberColumn(format="%.4g"),
                       "eps_high": st.column_config.NumberColumn(format="%.4g")},
        column_order=[c for c in (*SHOWN, *more) if c in shown.columns], key="runs_table",
        placeholder="—",  # a missing cell, text or number (Streamlit's default draws "None"); numbers still sort
    )
    for run in ctx.selected:
        row = table.loc[run]
        if row["status"] in ("failed", "invalid") and isinstance(row["error"], str):
            st.error(f"{run}: {row['error']}")
        controls.show_problems(row["problems"] if isinstance(row["problems"], list) else [], f"files of {run}")


runs_list()
