"""Sweep: every run under the runs directory grouped by algorithm (and DHPO clip mode) across seeds — mean
and 95 % bootstrap interval per outcome, paired differences against a baseline, curves with bands
(dhpo_suite.science.compare, the statistics of `dhpo-suite compare`)."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dhpo_suite.dashboard import controls, sweep_stats
from dhpo_suite.science import compare as cmp
from dhpo_suite.science.tables import fmt_interval

ctx = controls.context()
st.title("Sweep: algorithms across seeds")
st.caption("All runs under the runs directory (not only those picked in the sidebar), grouped by algorithm and "
           "DHPO clip mode. Intervals: 95 % percentile bootstrap over seeds (scipy); with few seeds they are "
           "narrower than their nominal level. Same numbers as `dhpo-suite compare`.")
CURVES = {"eval/heldout_reward": "Held-out reward", "entropy/mean": "Token entropy (nats)",
          "length/mean": "Response length (tokens)", "reward/mean": "Training reward"}


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for m in cmp.METRIC_DOCS:
        out[m] = out[m].map(fmt_interval)
    if "seeds" in out:
        out["seeds"] = out["seeds"].map(lambda s: ",".join(map(str, s)))
    return out.set_index("label")


MARKERS_UP_TO = 60
"""Curves with at most this many points per algorithm (e.g. held-out evaluations) show a marker per point."""


def band_figure(bands: pd.DataFrame, title: str) -> go.Figure:
    """Mean across seeds per label, with its 95 % band (filled between lo and hi); the steps are those of
    sweep_stats.bands (every step, or the min/max thinning of a long run)."""
    fig = go.Figure()
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    for i, (label, g) in enumerate(bands.groupby("label", sort=True)):
        color = palette[i % len(palette)]
        g = g.dropna(subset=["lo", "hi"])
        fig.add_trace(go.Scatter(x=list(g["step"]) + list(g["step"])[::-1], y=list(g["hi"]) + list(g["lo"])[::-1],
                                 fill="toself", fillcolor=color, opacity=0.15, line={"width": 0}, hoverinfo="skip",
                                 showlegend=False, legendgroup=label, name=f"{label} 95 %"))
    for i, (label, g) in enumerate(bands.groupby("label", sort=True)):
        mode = "lines+markers" if len(g) <= MARKERS_UP_TO else "lines"
        fig.add_trace(go.Scatter(x=g["step"], y=g["mean"], name=label, legendgroup=label, mode=mode,
                                 line={"color": palette[i % len(palette)]}, marker={"size": 4},
                                 customdata=g["n"], hovertemplate="step %{x}: %{y:.3g} (%{customdata} seeds)"))
    fig.update_layout(title=title, xaxis_title="step", height=340, margin={"t": 40, "b": 30})
    return fig


version = sweep_stats.sweep_version(ctx.table)
metrics, scalars, problems = sweep_stats.sweep(ctx.root, version)
controls.show_problems(problems)
if metrics.empty:
    st.info("No run with committed steps yet.")
    st.stop()
labels = sorted(metrics["label"].unique())
seeds = sorted(metrics["seed"].unique())
st.markdown(f"**{len(metrics)} runs**, {len(labels)} algorithms × up to {len(seeds)} seeds "
            f"({', '.join(map(str, seeds))}).")
unfinished = metrics[metrics["status"] != "completed"]
if len(unfinished):
    st.warning(f"{len(unfinished)} runs not completed (their numbers are from the steps so far): "
               + ", ".join(unfinished["run"]))
st.subheader("Per algorithm: mean [95 % CI] across seeds")
st.dataframe(as_text(sweep_stats.summary(ctx.root, version)), key="sweep_summary")
with st.expander("What each column measures"):
    st.markdown("\n".join(f"- **{k}**: {v}" for k, v in cmp.METRIC_DOCS.items()))
baseline = st.selectbox("Paired differences against", labels, index=labels.index("grpo") if "grpo" in labels else 0,
                        key="sweep_baseline")
diffs = sweep_stats.differences(ctx.root, version, baseline)
if diffs.empty or len(diffs) == 0:
    st.info(f"No other algorithm shares a seed with {baseline}.")
else:
    st.subheader(f"Paired difference vs {baseline} over shared seeds: mean [95 % CI]")
    st.dataframe(as_text(diffs), key="sweep_diffs")
st.subheader("Curves: mean across seeds with 95 % bands")
shown = st.multiselect("Algorithms", labels, default=labels, key="sweep_labels")
for metric, title in CURVES.items():
    if metric in scalars:
        parts = [sweep_stats.bands(ctx.root, version, metric, label) for label in shown]
        bands = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
        if not bands.empty:
            st.plotly_chart(band_figure(bands, f"{title} across seeds"), key=f"sweep_{metric}", theme=None)
with st.expander("Per-run metrics"):
    st.dataframe(metrics.set_index("run"), key="sweep_runs")
