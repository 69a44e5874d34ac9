"""Which branch's clip binds, on which tokens: clip fractions per branch with their definitions, the log-ratio
heatmap of a branch with its trust region, the run's tokens that bind most, and a step's outlier tokens, each
opening the response it comes from."""

import streamlit as st

from dhpo_suite.dashboard import controls, frames, viewer, views
from dhpo_suite.dashboard.figures.curves import CLIP_DEFINITIONS
from dhpo_suite.science import run_leak

ctx = controls.context()
st.title("Clipping and outliers")
if not ctx.selected:
    st.info("Pick a run in the sidebar.")
    st.stop()
c1, c2, c3 = st.columns([2, 2, 2])
wanted = controls.url_param("run")
if wanted in ctx.selected and "outliers_run" not in st.session_state:
    st.session_state["outliers_run"] = wanted
run = c1.selectbox("Run", ctx.selected, key="outliers_run")
path = ctx.path(run)
scal, problems = frames.scalars_frame(ctx, [run])
controls.show_problems(problems)
steps = [int(s) for s in scal["step"]]
if not steps:
    st.stop()
branches = views.branches(scal.columns)
wanted = controls.url_param("branch")
if wanted in branches and "outliers_branch" not in st.session_state:
    st.session_state["outliers_branch"] = wanted
branch = c2.radio("Branch", branches, horizontal=True, key="outliers_branch")
sign = c3.radio("Tokens", ["all", "A>0", "A<0"], horizontal=True, key="outliers_sign",
                help="Split by the sign of the token's advantage: which clip can bind depends on it.")
controls.set_url(run=run, branch=branch)
st.plotly_chart(views.clip_view(ctx, run, branches), key="outliers_clip", theme=None)
leak = run_leak(scal.sort_values("step"))  # the trust-region leak (science/leak.py, docs/objectives.md)
st.caption(f"Trust-region leak of {run}: " + (
    "no clip bound in this run" if leak.branch is None else
    f"`clip/{leak.branch}/binding_kept` not logged" if leak.value != leak.value else
    f"{leak.value:.1%} of the gradient kept on the tokens whose own clip (`{leak.branch}`) binds, "
    f"{leak.binding:.2%} of tokens (GRPO 0: eq. 3 drops it; DHPO branch clipping keeps (1−w)·s/m by eqs. 11, 17)"),
    help="Σ binding_kept × binding × tokens / Σ binding × tokens over the run's steps: docs/objectives.md, "
         "'The trust-region leak'.")
with st.expander("What outside and binding mean", expanded=False):
    st.markdown(CLIP_DEFINITIONS)

(lo, hi), _ = controls.step_controls(steps[-1], "outliers", smoothing=False)
heatmap, probs = views.heatmap_view(path, steps, (lo, hi), branch, sign, scal.columns)
controls.show_problems(probs)
st.plotly_chart(heatmap, key="outliers_heatmap", theme=None)

st.subheader(f"Tokens that bind most in {run}")
summary_steps, summary, probs = views.binding_view(path, steps, (lo, hi))
controls.show_problems(probs)
st.caption(f"Binding outlier tokens (the clip removed their gradient) over {len(summary_steps)} evenly spaced "
           f"steps of the range, grouped by token text: how often, in which branches, mean ratio.")
st.dataframe(summary, key="outliers_summary", hide_index=True,
             column_config={"mean ratio": st.column_config.NumberColumn(format="%.4g"),
                            "share of binding outliers": st.column_config.NumberColumn(format="percent")})


@st.fragment  # a step, a branch filter or a row changes only this part: the charts above are not redrawn
def step_outliers() -> None:
    st.subheader("Outlier tokens of a step")
    step = controls.step_picker(steps, "outliers_step")
    shown = st.multiselect("Branches", branches, branches, key=f"outliers_branches_{'_'.join(branches)}",
                           help="Kept per set of branches: a run with a mixed branch always offers it.")
    viewer.outlier_rows(ctx, run, step, shown, "outliers")


step_outliers()
