"""Branch outliers: log-ratio heatmaps per branch with the trust region, top outlier tokens of a step, and a
rollout viewer colouring each token (selection by widgets: Streamlit reports no clicks on heatmaps)."""

import streamlit as st

from dhpo_suite.dashboard import controls, data, frames
from dhpo_suite.dashboard.figures import outliers as fig
from dhpo_suite.dashboard.figures.tokens import COLOR_BY, rollout_html
from dhpo_suite.runs.format import step_file

ctx = controls.context()
st.title("Branch outliers")
if not ctx.selected:
    st.info("Pick a run in the sidebar.")
    st.stop()
c1, c2, c3 = st.columns([2, 2, 2])
run = c1.selectbox("Run", ctx.selected, key="outliers_run")
path = ctx.path(run)
scal, problems = frames.scalars_frame(ctx, [run])
controls.show_problems(problems)
steps = [int(s) for s in scal["step"]]
if not steps:
    st.stop()
branches = [b for b in ("token", "sequence", "mixed") if f"ratio/{b}/mean" in scal.columns]
branch = c2.radio("Branch", branches, horizontal=True, key="outliers_branch")
sign = c3.radio("Tokens", ["all", "A>0", "A<0"], horizontal=True, key="outliers_sign",
                help="Split by the sign of the token's advantage: which clip can bind depends on it.")
(lo, hi), _ = controls.step_controls(steps[-1], "outliers", smoothing=False)
telemetry = data.manifest_telemetry(path, data.run_version(path))
hists, probs = data.histograms(path, frames.sample_steps(steps, lo, hi), frames.log_ratio_names(branch, sign))
controls.show_problems(probs)
counts, edges = fig.heatmap_frame(hists)
has_region = f"clip/{branch}/outside_low" in scal.columns  # no clip metrics: the branch has no trust region
bounds = data.trust_bounds(path, int(counts.index[0]), branch, telemetry) if has_region and len(edges) else None
st.plotly_chart(fig.log_ratio_heatmap(counts, edges, bounds, f"log(ratio) of the {branch} branch ({sign})"),
                key="outliers_heatmap", theme=None)

st.subheader("Outlier tokens of a step")
step = st.select_slider("Step", steps, value=steps[-1], key="outliers_step")
table, probs = data.outliers(path, step, data.mtime(step_file(path, "outliers", step)))
controls.show_problems(probs)
st.dataframe(fig.outlier_table(table, st.multiselect("Branches", branches, branches, key="outliers_branches")),
             column_config={c: st.column_config.NumberColumn(c, format="%.4g") for c in
                            ("distance", "ratio", "entropy", "w", "advantage")}, key="outliers_table")

st.subheader("Rollout viewer")
samples, probs = data.samples(path, step, data.mtime(step_file(path, "samples", step)))
controls.show_problems(probs)
if samples.empty:
    st.info(f"No sampled responses recorded at step {step}.")
    st.stop()
c1, c2 = st.columns([2, 3])
i = c1.selectbox("Response", range(len(samples)), key="rollout_response", format_func=lambda i: (
    f"#{samples.at[i, 'response_id']}  reward {samples.at[i, 'reward']}  A {samples.at[i, 'advantage']:.2f}  "
    f"{samples.at[i, 'length']} tokens"))
label = c2.radio("Colour by", list(COLOR_BY), horizontal=True, key="rollout_color")
row, column = samples.iloc[i], COLOR_BY[label]
flags = {"token_ratio": "clip_token", "seq_ratio": "clip_sequence", "mixed_ratio": "clip_mixed"}.get(column)
outside = [bool(f & 3) for f in row[flags]] if flags is not None and row[flags] is not None else None
ratio_branch = {"token_ratio": "token", "seq_ratio": "sequence", "mixed_ratio": "mixed"}.get(column)
bounds = None
if ratio_branch and f"clip/{ratio_branch}/outside_low" in scal.columns:
    bounds = data.trust_bounds(path, step, ratio_branch, telemetry)
if row[column] is None:
    st.info(f"{label} was not recorded for this run.")
else:
    st.markdown(rollout_html(list(row["token_text"]), list(row[column]), column, bounds, outside), unsafe_allow_html=True)
    st.caption("Ratios: blue below 1, red above, full colour at the trust-region edge; a box marks tokens outside it.")
