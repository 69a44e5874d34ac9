"""Evaluation: Table-1 pivot of the selected runs' checkpoint evaluations, accuracy vs step, and a
per-problem drill-down with every sample's extracted answer and grade."""

import streamlit as st

from dhpo_suite.dashboard import controls, data, frames
from dhpo_suite.dashboard.figures import evaluation as fig

ctx = controls.context()
st.title("Evaluation")
if not ctx.selected:
    st.info("Pick one or more runs in the sidebar.")
    st.stop()
frame, dirs, problems = frames.evals_frame(ctx)
controls.show_problems(problems)
if frame.empty:
    st.info("No checkpoint evaluations in the selected runs yet (`dhpo-suite eval` writes them to RUN/evals/).")
    st.stop()

st.subheader("Accuracy per benchmark (%), Table-1 style")
rows = st.radio("Checkpoints", ["last of each run", "all"], horizontal=True, key="eval_rows")
st.dataframe(fig.table1(fig.last_checkpoints(frame) if rows == "last of each run" else frame), key="table1")
bench = st.selectbox("Curve", ["AVG", *frame["bench"].unique()], key="eval_curve")
st.plotly_chart(fig.accuracy_curve(frame, None if bench == "AVG" else bench, ctx.colors),
                key="eval_fig", theme=None)

st.subheader("Per-problem drill-down")
c1, c2 = st.columns(2)
label = c1.selectbox("Evaluation", list(dirs), index=len(dirs) - 1, key="eval_dir")
bench = c2.selectbox("Benchmark", list(frame.loc[frame["label"] == label, "bench"]), key="eval_bench")
records, skipped = data.eval_samples(dirs[label], bench)
controls.show_problems(skipped, "sample lines")
overview = fig.problem_overview(records)
st.dataframe(overview, key="eval_problems", hide_index=True,
             column_config={"accuracy": st.column_config.NumberColumn(format="percent")})
if overview.empty:
    st.stop()
problem = st.selectbox("Problem (hardest first)", list(overview["problem_id"]), key="eval_problem")
rows = [r for r in records if str(r["problem_id"]) == str(problem)]
gold = rows[0].get("gold")
st.markdown(f"**Problem** {fig.problem_text(rows[0])}  \n**Gold answer** "
            f"{', '.join(f'`{g}`' for g in gold) if isinstance(gold, list) else f'`{gold}`'}")
st.dataframe(fig.problem_samples(records, problem), key="eval_samples")
for r in sorted(rows, key=lambda r: r["sample"])[:8]:
    with st.expander(f"sample {r['sample']} · {'✓' if r['correct'] else '✗'} · extracted {r['extracted']!r}"):
        st.text(r["response"])
