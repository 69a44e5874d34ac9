"""Evaluation: Table-1 pivot of the selected runs' checkpoint evaluations, accuracy vs step, and a
per-problem drill-down with every sample's extracted answer and grade: a "wrong only" list, and two
evaluations (runs or checkpoints) of the same problem side by side."""

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

# The view lives in the URL (a shared link opens the same evaluation, benchmark, problem and filters).
controls.seed_from_url("eval_rows", "rows", lambda v: v if v in ("last of each run", "all") else None)
controls.seed_from_url("eval_dir", "eval", lambda v: v if v in dirs else None)
controls.seed_from_url("eval_wrong", "wrong", lambda v: v == "1")
st.subheader("Accuracy per benchmark (%), Table-1 style")
rows = st.radio("Checkpoints", ["last of each run", "all"], horizontal=True, key="eval_rows")
st.dataframe(fig.table1(fig.last_checkpoints(frame) if rows == "last of each run" else frame), key="table1")
bench = st.selectbox("Curve", ["AVG", *frame["bench"].unique()], key="eval_curve")
st.plotly_chart(fig.accuracy_curve(frame, None if bench == "AVG" else bench, ctx.colors),
                key="eval_fig", theme=None)

st.subheader("Per-problem drill-down")
c1, c2, c3 = st.columns([2, 1, 2])
if st.session_state.get("eval_dir") not in dirs:
    st.session_state["eval_dir"] = list(dirs)[-1]
label = c1.selectbox("Evaluation", list(dirs), key="eval_dir")
benches = list(frame.loc[frame["label"] == label, "bench"])
controls.seed_from_url("eval_bench", "bench", lambda v: v if v in benches else None)
bench = c2.selectbox("Benchmark", benches, key="eval_bench")
others = [d for d in dirs if d != label and bench in set(frame.loc[frame["label"] == d, "bench"])]
controls.seed_from_url("eval_other", "other", lambda v: v if v in others else None)
other = c3.selectbox("Side by side with", ["—", *others], key="eval_other",
                     help="Another run's or checkpoint's evaluation of the same benchmark: the same problem's "
                          "samples of both, next to each other")
records, skipped = data.eval_samples(dirs[label], bench)
controls.show_problems(skipped, "sample lines")
wrong_only = st.toggle("Wrong samples only", key="eval_wrong")
if wrong_only:
    wrong = fig.wrong_samples(records)
    st.caption(f"{len(wrong)} of {len(records)} samples graded wrong")
    st.dataframe(wrong, key="eval_wrong_list", hide_index=True)
if other != "—":
    other_records, more = data.eval_samples(dirs[other], bench)
    controls.show_problems(more, "sample lines")
    st.caption("Problems both evaluated, largest change in accuracy first")
    st.dataframe(fig.compare_problems(records, other_records, (label, other)), key="eval_compare", hide_index=True)
overview = fig.problem_overview(records)
if wrong_only:
    overview = overview[overview["correct"] < overview["samples"]]
st.dataframe(overview, key="eval_problems", hide_index=True,
             column_config={"accuracy": st.column_config.NumberColumn(format="percent")})
if overview.empty:
    st.stop()
ids = [str(p) for p in overview["problem_id"]]
controls.seed_from_url("eval_problem", "problem", lambda v: v if v in ids else None)
problem = st.selectbox("Problem (hardest first)", ids, key="eval_problem")
controls.set_url(rows=None if rows == "last of each run" else rows, eval=label, bench=bench,
                 other=None if other == "—" else other, wrong="1" if wrong_only else None, problem=problem)


def show_problem(records: list[dict], where, name: str) -> None:
    """One evaluation's samples of the chosen problem (wrong ones only when asked)."""
    mine = [r for r in records if str(r["problem_id"]) == str(problem)]
    if not mine:
        where.info(f"{name}: no sample of problem {problem}")
        return
    right = sum(bool(r["correct"]) for r in mine)
    where.markdown(f"**{name}**: {right}/{len(mine)} correct")
    table = fig.problem_samples(records, problem)
    where.dataframe(table[~table["correct"]] if wrong_only else table, key=f"eval_samples_{name}", hide_index=True)
    for r in sorted((r for r in mine if not (wrong_only and r["correct"])), key=lambda r: r["sample"])[:8]:
        with where.expander(f"sample {r['sample']} · {'✓' if r['correct'] else '✗'} · extracted {r['extracted']!r}"):
            st.text(r["response"])


first = [r for r in records if str(r["problem_id"]) == str(problem)][0]
gold = first.get("gold")
st.markdown(f"**Problem** {fig.problem_text(first)}  \n**Gold answer** "
            f"{', '.join(f'`{g}`' for g in gold) if isinstance(gold, list) else f'`{gold}`'}")
if other == "—":
    show_problem(records, st, label)
else:
    left, right = st.columns(2)
    show_problem(records, left, label)
    show_problem(other_records, right, other)
