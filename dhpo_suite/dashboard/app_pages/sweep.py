"""Sweep: the runs picked in the sidebar grouped by every setting that differs between them (never by algorithm
alone), compared across seeds with the statistics of `dhpo-suite compare` (dhpo_suite.science.compare): mean
and 95 % interval per outcome with n, paired differences against a chosen group, curves with bands on a
common step grid (n per point in the hover)."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dhpo_suite.dashboard import controls, sweep_stats, views
from dhpo_suite.science import METRIC_DOCS

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

MARKERS_UP_TO = 60  # curves with at most this many points (e.g. held-out evaluations) get a marker per point


def collapse_text(value: str, collapsed: str) -> str:
    """collapse_step of a group whose runs did not all collapse: compare counts a run that never collapsed
    at its last step, which alone would read as a collapse there."""
    k, n = collapsed.split("/")
    if k == "0":
        return f"never collapsed (0/{n})"
    return value if k == n else f"{value} ({collapsed} collapsed; the others at their last step)"


def as_text(frame: pd.DataFrame, collapsed: dict[str, str], baseline: str | None = None) -> pd.DataFrame:
    """Intervals with significant digits, no Python None, collapse steps said as what they are; `baseline`:
    rows are paired differences against that group."""
    out = frame.copy()
    for m in METRIC_DOCS:
        out[m] = out[m].map(sweep_stats.fmt_sig)
    if baseline is None:
        out["collapse_step"] = [collapse_text(v, collapsed[g]) for v, g in zip(out["collapse_step"], out["label"])]
    else:
        out["collapse_step"] = [v if not (collapsed[g].startswith("0/") and collapsed[baseline].startswith("0/"))
                                else "— (neither collapsed)" for v, g in zip(out["collapse_step"], out["label"])]
    if "seeds" in out:
        out["seeds"] = out["seeds"].map(lambda s: ",".join(map(str, s)))
    return out.set_index("label").astype(object).where(lambda d: d.notna(), "—")


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
colors = views.group_colors(labels)  # the Dynamics page's "Mean across seeds" colours too
st.markdown(f"**{len(metrics)} runs** in **{len(labels)} groups**.")
unfinished = metrics[metrics["status"] != "completed"]
if len(unfinished):
    st.warning(f"{len(unfinished)} runs not completed (their numbers are from the steps so far): "
               + ", ".join(unfinished["run"]))
st.subheader("Per group (columns): mean [95 % CI] across seeds, n runs")
summary = sweep_stats.summary(version)
collapsed = dict(zip(summary["label"], summary["collapsed"]))
st.table(as_text(summary, collapsed).astype(str).T)  # groups as columns: fits 1280 px, HTML
with st.expander("What each row measures"):
    st.markdown("\n".join(f"- **{k}**: {v}" for k, v in METRIC_DOCS.items()))
controls.seed_from_url("sweep_baseline", "baseline", lambda v: v if v in labels else None)
if st.session_state.get("sweep_baseline") not in labels:
    st.session_state["sweep_baseline"] = next((g for g in labels if g.split(" · ")[0] == "grpo"), labels[0])
baseline = st.selectbox("Paired differences against", labels, key="sweep_baseline")
diffs = sweep_stats.differences(version, baseline)
apart = sweep_stats.one_apart(version, baseline)
others = [g for g in labels if g != baseline and g not in apart]
if others:
    st.caption(f"Not paired with {baseline}: {', '.join(others)} (they differ from it in more than one setting; "
               "a difference between them would measure several changes at once)")
if diffs.empty:
    st.info(f"No other group differs from {baseline} in one setting only and shares a seed with it.")
else:
    st.subheader(f"Paired difference vs {baseline} over shared seeds: mean [95 % CI]")
    st.table(as_text(diffs, collapsed, baseline).astype(str).T)
with st.expander("Groups: the settings that differ between the picked runs"):
    st.dataframe(settings.set_index("run"), key="sweep_groups")
st.subheader("Curves: mean across seeds with 95 % bands, on the steps every run of a group logged")
# The groups drawn: all of them whenever the groups change (Compare all, a run picked), else the user's choice;
# a widget's default applies only at its first render, so "Compare all" drew only the groups seen first.
if st.session_state.get("_sweep_labels_of") != labels:
    st.session_state["_sweep_labels_of"] = labels
    wanted = [g for g in (controls.url_param("groups") or "").split("|") if g in labels]
    st.session_state["sweep_labels"] = wanted if wanted and "_sweep_seeded" not in st.session_state else labels
    st.session_state["_sweep_seeded"] = True
shown = st.multiselect("Groups", labels, key="sweep_labels")
controls.set_url(baseline=baseline, groups=None if shown == labels else "|".join(shown) or None)
for metric, title in sweep_stats.CURVES.items():
    if metric in scalars:
        parts = [b for b in (sweep_stats.bands(version, metric, label) for label in shown) if not b.empty]
        if parts:
            bands = pd.concat(parts, ignore_index=True)
            st.plotly_chart(band_figure(bands, f"{title} across seeds", colors), key=f"sweep_{metric}", theme=None)
with st.expander("Per-run metrics"):
    st.dataframe(metrics.set_index("run"), key="sweep_runs")
