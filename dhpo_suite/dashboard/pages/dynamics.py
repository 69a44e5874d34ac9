"""Dynamics: training curves of the selected runs overlaid, with smoothing and a step range."""

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


@st.fragment(run_every=ctx.refresh)
def charts() -> None:
    raw, problems = frames.scalars_frame(ctx)
    controls.show_problems(problems)
    f = fig.prepare(raw, list(raw.columns.drop(["run", "step"])), alpha, step_range)
    colors = fig.run_colors(ctx.selected)
    panels = [
        fig.line_overlay(f, "entropy/mean", "Token entropy: mean, p10–p90 band", band=("entropy/p10", "entropy/p90"), colors=colors),
        fig.line_overlay(f, "length/mean", "Response length: mean (dotted: p90)", extra=[("length/p90", "p90")], colors=colors),
        fig.line_overlay(f, "length/truncated_frac", "Truncation rate (responses cut at the length limit)", colors=colors),
        fig.line_overlay(f, "reward/mean", "Reward (mean per response)", colors=colors),
        accuracy_curve(frames.evals_frame(ctx)[0], colors=colors),
        fig.line_overlay(f, "w/mean", "Mixing weight w: mean, p10–p90 band (dotted: median)", band=("w/p10", "w/p90"),
                         extra=[("w/p50", "p50")], colors=colors),
        fig.line_overlay(f, "kl/k3", "KL(π_old‖π), k3 estimator (dotted: k1)", extra=[("kl/k1", "k1")], colors=colors),
        fig.line_overlay(f, "grad_norm", "Gradient norm (before clipping)", colors=colors),
    ]
    for i in range(0, len(panels), 2):
        for j, (col, panel) in enumerate(zip(st.columns(2), panels[i : i + 2])):
            col.plotly_chart(panel, key=f"dynamics_{i + j}")
    st.plotly_chart(fig.clip_fractions(f, ("token", "sequence", "mixed"), colors=colors), key="dyn_clip")


charts()
