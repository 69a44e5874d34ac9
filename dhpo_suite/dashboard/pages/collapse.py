"""Entropy collapse: the detector's verdict per run, groups without signal, and the entropy-percentile view."""

import pandas as pd
import streamlit as st

from dhpo_suite.dashboard import controls, data, frames
from dhpo_suite.dashboard.collapse import CollapseRule, detect_collapse, verdict
from dhpo_suite.dashboard.figures import collapse as fig
from dhpo_suite.dashboard.figures.curves import prepare, run_colors

ctx = controls.context()
st.title("Entropy collapse")
if not ctx.selected:
    st.info("Pick one or more runs in the sidebar.")
    st.stop()
with st.expander("Collapse rule and smoothing (see docs/dashboard.md)"):
    c1, c2, c3 = st.columns(3)
    rule = CollapseRule(
        entropy_drop=c1.slider("entropy drop", 0.05, 0.95, CollapseRule.entropy_drop, 0.05, key="rule_h"),
        length_drop=c2.slider("length drop", 0.05, 0.95, CollapseRule.length_drop, 0.05, key="rule_l"),
        patience=c3.number_input("patience (steps)", 1, 100, CollapseRule.patience, key="rule_p"),
    )
    smoothing = st.slider("Smoothing of the group chart", 0.0, 0.99, 0.9, 0.01, key="collapse_smooth")
    st.caption("Plateau: median of the first 10 % of steps. Collapse: the trailing 5-step median stays below "
               "(1 − drop) × plateau for `patience` steps; the run collapses when entropy and length both have.")


@st.fragment(run_every=ctx.refresh)
def detector() -> None:
    frame, problems = frames.scalars_frame(ctx)
    controls.show_problems(problems)
    verdicts = {r: detect_collapse(g.set_index("step").get("entropy/mean", pd.Series(dtype=float)),
                                   g.set_index("step").get("length/mean", pd.Series(dtype=float)), rule)
                for r, g in frame.groupby("run", sort=False)}
    st.dataframe(pd.DataFrame({r: {"verdict": verdict(v), "collapse step": v.step, "entropy collapse": v.entropy.step,
                                   "entropy plateau": v.entropy.plateau, "length collapse": v.length.step,
                                   "length plateau": v.length.plateau} for r, v in verdicts.items()}).T,
                 key="collapse_table")
    colors = run_colors(ctx.selected)
    shown = prepare(frame, ["entropy/mean", "length/mean"])  # thinned for drawing; detection used every step
    st.plotly_chart(fig.collapse_figure(shown, verdicts, colors), key="collapse_fig", theme=None)
    groups = prepare(frame, ["groups/all_correct_frac", "groups/all_wrong_frac"], smoothing)
    st.plotly_chart(fig.group_outcomes(groups, colors), key="collapse_groups", theme=None)


detector()
st.subheader("Entropy percentiles: the low-entropy majority and the high-entropy minority")
run = st.selectbox("Run", ctx.selected, key="collapse_run")
frame, _ = frames.scalars_frame(ctx, [run])
pct = prepare(frame, ["entropy/p10", "entropy/p50", "entropy/p90", "entropy/p99", "entropy/frac_below_0.01"])
st.plotly_chart(fig.entropy_percentiles(pct, run), key="collapse_pct", theme=None)
steps = [int(s) for s in frame["step"]]
if steps:
    c1, c2 = st.columns([3, 1])
    step = c1.select_slider("Step", steps, value=steps[-1], key="collapse_step")
    q = c2.slider("majority share", 0.5, 0.99, 0.8, 0.01, key="collapse_q")
    hists, probs = data.histograms(ctx.path(run), [step], ["entropy"])
    controls.show_problems(probs)
    if step in hists:
        edges, counts = hists[step]
        split = fig.entropy_split(edges, counts, q)
        st.plotly_chart(fig.entropy_split_figure(edges, counts, split, f"Token entropy at step {step}"),
                        key="collapse_split", theme=None)
        if split.mean_high == split.mean_high:  # not NaN: some tokens lie above the split
            st.caption(f"The top {1 - q:.0%} of tokens (entropy > {split.threshold:.3g} nats) average "
                       f"{split.mean_high:.3g} nats and carry {split.entropy_share_high:.0%} of the step's entropy; "
                       f"the other {q:.0%} average {split.mean_low:.3g} nats.")
        else:
            st.caption(f"Every token at step {step} has entropy ≤ {split.threshold:.3g} nats: no high-entropy "
                       "minority is left (collapsed).")
