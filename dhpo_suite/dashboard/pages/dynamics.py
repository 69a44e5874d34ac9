"""Dynamics: training curves of the selected runs overlaid, with smoothing and a step range."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dhpo_suite.dashboard import controls, frames
from dhpo_suite.dashboard.figures import curves as fig
from dhpo_suite.dashboard.figures.evaluation import accuracy_curve

ctx = controls.context()
st.title("Dynamics")
if not ctx.selected:
    st.info("Pick one or more runs in the sidebar.")
    st.stop()
frame, _ = frames.scalars_frame(ctx)
step_range, alpha = controls.step_controls(int(frame["step"].max()) if len(frame) else 0, "dynamics")


@st.cache_resource(max_entries=32, show_spinner=False)  # figures are only read (st.plotly_chart copies them)
def panels(raw: pd.DataFrame, evals: pd.DataFrame, alpha: float, step_range: tuple, runs: tuple) -> list[go.Figure]:
    f = fig.prepare(raw, list(raw.columns.drop(["run", "step"])), alpha, step_range)
    colors = fig.run_colors(runs)
    return [
        fig.line_overlay(f, "entropy/mean", "Token entropy: mean, p10–p90 band", band=("entropy/p10", "entropy/p90"), colors=colors),
        fig.line_overlay(f, "length/mean", "Response length: mean (dotted: p90)", extra=[("length/p90", "p90")], colors=colors),
        fig.line_overlay(f, "length/truncated_frac", "Truncation rate (responses cut at the length limit)", colors=colors),
        fig.line_overlay(f, "reward/mean", "Reward (mean per response)", colors=colors),
        accuracy_curve(evals, colors=colors),
        fig.line_overlay(f, "w/mean", "Mixing weight w: mean, p10–p90 band (dotted: median)", band=("w/p10", "w/p90"),
                         extra=[("w/p50", "p50")], colors=colors),
        fig.line_overlay(f, "kl/k3", "KL(π_old‖π), k3 estimator (dotted: k1)", extra=[("kl/k1", "k1")], colors=colors),
        fig.line_overlay(f, "grad_norm", "Gradient norm (before clipping)", colors=colors),
        fig.clip_fractions(f, ("token", "sequence", "mixed"), colors=colors),
    ]


@st.fragment(run_every=ctx.refresh)
def charts() -> None:
    raw, problems = frames.scalars_frame(ctx)
    controls.show_problems(problems)
    *lines, clip = panels(raw, frames.evals_frame(ctx)[0], alpha, step_range, tuple(ctx.selected))
    for i in range(0, len(lines), 2):
        for j, (col, panel) in enumerate(zip(st.columns(2), lines[i : i + 2])):
            col.plotly_chart(panel, key=f"dynamics_{i + j}", theme=None)
    st.plotly_chart(clip, key="dyn_clip", theme=None)


charts()
