"""Sweep: the runs picked in the sidebar grouped by every setting that differs between them (never by algorithm
alone), compared across seeds with the statistics of `dhpo-suite compare` (dhpo_suite.science.compare): mean
and 95 % interval per outcome with n, paired differences against a chosen group, curves with bands on a
common step grid (n per point in the hover)."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.colors import qualitative

from dhpo_suite.dashboard import controls, sweep_stats
from dhpo_suite.science import compare as cmp
from dhpo_suite.science.tables import fmt_interval

ctx = controls.context()
st.title("Sweep: settings across seeds")
st.caption("The runs picked in the sidebar, grouped by every setting that differs between them (a group's runs "
           "differ only in their seed). Every mean, 95 % interval and paired difference is `dhpo-suite compare`'s "
           "own (dhpo_suite.science.compare), computed by the same code on these runs.")
valid = [r for r in ctx.table.index if ctx.table.at[r, "status"] != "invalid"]
if len(ctx.selected) < len(valid):
    left, right = st.columns([4, 1])
    left.markdown(f"Comparing the **{len(ctx.selected)}** runs picked in the sidebar, of {len(valid)} readable.")
    if right.button(f"Compare all {len(valid)}", key="sweep_all"):
        st.session_state["selected_runs"] = valid
        st.rerun()
if not ctx.selected:
    st.stop()

# One palette for groups, none of whose colours is a run's colour (runs use Plotly's and D3's palettes).
GROUP_PALETTE = qualitative.Dark2
MARKERS_UP_TO = 60  # curves with at most this many points (e.g. held-out evaluations) get a marker per point


def as_text(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for m in cmp.METRIC_DOCS:
        out[m] = out[m].map(fmt_interval)
    if "seeds" in out:
        out["seeds"] = out["seeds"].map(lambda s: ",".join(map(str, s)))
    return out.set_index("label")


def band_figure(bands: pd.DataFrame, title: str, colors: dict[str, str]) -> go.Figure:
    """Mean across the runs of each group, with its 95 % band (filled between lo and hi) and n per point; the
    steps are those of sweep_stats.bands (the common grid, thinned for drawing)."""
    traces = []
    for label, g in bands.groupby("label", sort=True):
        g = g.dropna(subset=["lo", "hi"])
        traces.append(go.Scatter(x=list(g["step"]) + list(g["step"])[::-1], y=list(g["hi"]) + list(g["lo"])[::-1],
                                 fill="toself", fillcolor=colors[label], opacity=0.15, line={"width": 0},
                                 hoverinfo="skip", showlegend=False, legendgroup=label, name=f"{label} 95 %"))
    for label, g in bands.groupby("label", sort=True):
        mode = "lines+markers" if len(g) <= MARKERS_UP_TO else "lines"
        traces.append(go.Scatter(x=g["step"], y=g["mean"], name=label, legendgroup=label, mode=mode,
                                 line={"color": colors[label], "width": 2.5}, marker={"size": 4}, customdata=g["n"],
                                 hovertemplate=f"{label}<br>step %{{x}}: %{{y:.4g}} (n = %{{customdata}} runs)"
                                               "<extra></extra>"))
    fig = go.Figure(data=traces)
    fig.update_layout(title=title, xaxis_title="training step", height=360, margin={"t": 40, "b": 30},
                      legend={"orientation": "h", "y": -0.25})
    return fig


version = sweep_stats.selection_version(ctx.table, ctx.selected)
metrics, scalars, problems, settings = sweep_stats.sweep(version)
controls.show_problems(problems)
if metrics.empty:
    st.info("No picked run has committed steps yet.")
    st.stop()
labels = sorted(metrics["label"].unique())
colors = {label: GROUP_PALETTE[i % len(GROUP_PALETTE)] for i, label in enumerate(labels)}
st.markdown(f"**{len(metrics)} runs** in **{len(labels)} groups**.")
unfinished = metrics[metrics["status"] != "completed"]
if len(unfinished):
    st.warning(f"{len(unfinished)} runs not completed (their numbers are from the steps so far): "
               + ", ".join(unfinished["run"]))
st.subheader("Per group (columns): mean [95 % CI] across seeds, n runs")
st.table(as_text(sweep_stats.summary(version)).astype(str).T)  # groups as columns: fits 1280 px, HTML
with st.expander("What each row measures"):
    st.markdown("\n".join(f"- **{k}**: {v}" for k, v in cmp.METRIC_DOCS.items()))
default = next((i for i, label in enumerate(labels) if label.split(" · ")[0] == "grpo"), 0)
baseline = st.selectbox("Paired differences against", labels, index=default, key="sweep_baseline")
diffs = sweep_stats.differences(version, baseline)
if diffs.empty:
    st.info(f"No other group shares a seed with {baseline}.")
else:
    st.subheader(f"Paired difference vs {baseline} over shared seeds: mean [95 % CI]")
    st.table(as_text(diffs).astype(str).T)
with st.expander("Groups: the settings that differ between the picked runs"):
    st.dataframe(settings.set_index("run"), key="sweep_groups")
st.subheader("Curves: mean across seeds with 95 % bands, on the steps every run of a group logged")
shown = st.multiselect("Groups", labels, default=labels, key="sweep_labels")
for metric, title in sweep_stats.CURVES.items():
    if metric in scalars:
        parts = [b for b in (sweep_stats.bands(version, metric, label) for label in shown) if not b.empty]
        if parts:
            bands = pd.concat(parts, ignore_index=True)
            st.plotly_chart(band_figure(bands, f"{title} across seeds", colors), key=f"sweep_{metric}", theme=None)
with st.expander("Per-run metrics"):
    st.dataframe(metrics.set_index("run"), key="sweep_runs")
