"""Which branch's clip binds, on which tokens: clip fractions per branch with their definitions, the log-ratio
heatmap of a branch with its trust region, the run's tokens that bind most, and a step's outlier tokens, each
opening the response it comes from."""

import plotly.graph_objects as go
import streamlit as st

from dhpo_suite.dashboard import controls, data, frames, viewer
from dhpo_suite.dashboard.figures import outliers as fig
from dhpo_suite.dashboard.figures.curves import CLIP_DEFINITIONS, clip_fractions, prepare

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
branches = [b for b in ("token", "sequence", "mixed") if f"ratio/{b}/mean" in scal.columns]
wanted = controls.url_param("branch")
if wanted in branches and "outliers_branch" not in st.session_state:
    st.session_state["outliers_branch"] = wanted
branch = c2.radio("Branch", branches, horizontal=True, key="outliers_branch")
sign = c3.radio("Tokens", ["all", "A>0", "A<0"], horizontal=True, key="outliers_sign",
                help="Split by the sign of the token's advantage: which clip can bind depends on it.")
controls.set_url(run=run, branch=branch)
clip_mode = str(ctx.table.at[run, "clip"])


@st.cache_resource(max_entries=16, show_spinner=False)  # figures are only read (st.plotly_chart copies them)
def clip_figure(run: str, path: str, version: tuple, branches: tuple, color: str, clip_mode: str) -> go.Figure:
    """The run's clip fractions (`version`: data.run_version, the key of its scalars)."""
    scal = data.scalars(path, version)[0].assign(run=run)
    return clip_fractions(prepare(scal, [c for c in scal.columns if c.startswith("clip/")]), branches,
                          {run: color}, {run: clip_mode})


@st.cache_resource(max_entries=16, show_spinner=False)
def heatmap_figure(path: str, steps: tuple, names: tuple, versions: tuple, has_region: bool,
                   title: str, branch: str) -> tuple[go.Figure, list[str]]:
    """The log-ratio heatmap over `steps` (`versions`: data.step_versions of their distributions files) and the
    problems of the files it could not read; `has_region`: the branch has clip metrics, so a trust region."""
    hists, problems = data.histograms(path, list(steps), list(names), versions)
    counts, edges = fig.heatmap_frame(hists)
    telemetry = data.manifest_telemetry(path, data.run_version(path))
    bounds = data.trust_bounds(path, int(counts.index[0]), branch, telemetry) if has_region and len(edges) else None
    return fig.log_ratio_heatmap(counts, edges, bounds, title), problems


st.plotly_chart(clip_figure(run, path, data.run_version(path), tuple(branches), ctx.colors[run], clip_mode),
                key="outliers_clip", theme=None)
with st.expander("What outside and binding mean", expanded=False):
    st.markdown(CLIP_DEFINITIONS)

(lo, hi), _ = controls.step_controls(steps[-1], "outliers", smoothing=False)
heat_steps = frames.sample_steps(steps, lo, hi)
heatmap, probs = heatmap_figure(path, tuple(heat_steps), tuple(frames.log_ratio_names(branch, sign)),
                                data.step_versions(path, "distributions", heat_steps),
                                f"clip/{branch}/outside_low" in scal.columns,  # no clip metrics: no trust region
                                f"log(ratio) of the {branch} branch ({sign})", branch)
controls.show_problems(probs)
st.plotly_chart(heatmap, key="outliers_heatmap", theme=None)

st.subheader(f"Tokens that bind most in {run}")
summary_steps = frames.sample_steps(steps, lo, hi, n=frames.SUMMARY_STEPS)
tables, probs = data.outlier_tables(path, summary_steps, fig.SUMMARY_COLUMNS)
controls.show_problems(probs)
st.caption(f"Binding outlier tokens (the clip removed their gradient) over {len(summary_steps)} evenly spaced "
           f"steps of the range, grouped by token text: how often, in which branches, mean ratio.")
st.dataframe(fig.binding_summary(tables), key="outliers_summary", hide_index=True,
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
