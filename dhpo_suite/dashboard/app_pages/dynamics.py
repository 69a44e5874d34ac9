"""Compare runs: training curves of the selected runs overlaid (one colour per run on every chart, one
legend), raw and smoothed both drawn and labelled, any logged metric on demand, x-axis choice (step, tokens
seen, wall time), a linear/log switch on every chart, the CSV of any chart; the view lives in the URL."""

from functools import partial

import streamlit as st

from dhpo_suite.dashboard import controls, frames, sweep_stats, views
from dhpo_suite.dashboard.figures import curves as fig
from dhpo_suite.runs.metrics import METRICS

ctx = controls.context()
st.title("Dynamics")
if not ctx.selected:
    st.info("Pick one or more runs in the sidebar.")
    st.stop()
frame, _ = frames.scalars_frame(ctx)
max_step = int(frame["step"].max()) if len(frame) else 0
controls.seed_from_url("dynamics_range", "range", controls.parse_range(max_step))
controls.seed_from_url("dynamics_smooth", "smooth", controls.parse_float(0.0, 0.99))
top = st.columns([3, 1.3, 2.4, 1.5], vertical_alignment="bottom")  # one row: the panels start above the fold
step_range, alpha = controls.step_controls(max_step, "dynamics", where=top[:2])
logged = [c for c in frame.columns if c not in ("run", "step", "time") and frame[c].notna().any()]
controls.seed_from_url("dynamics_metrics", "metrics", lambda v: [m for m in v.split(",") if m in logged])
axes = [k for k in fig.X_AXES if k == "step" or fig.X_SOURCE[k] in frame.columns]
controls.seed_from_url("dynamics_x", "x", lambda v: v if v in axes else None)
controls.seed_from_url("dynamics_log", "log", lambda v: v == "1")
controls.seed_from_url("dynamics_clip", "clip", lambda v: v == "1")
c2, c3 = top[2:]
c1, c4 = st.columns([3, 2])
extra = c1.multiselect("Plot any logged metric", logged, key="dynamics_metrics", label_visibility="collapsed",
                       placeholder="Plot any logged metric…",
                       format_func=lambda m: f"{m} — {METRICS[m]}" if m in METRICS else m,
                       help="Every scalar the runs logged (held-out reward, lr, loss, advantage statistics, "
                            "throughput, ...), one chart each")
x_axis = c2.radio("x axis", axes, key="dynamics_x", horizontal=True,
                  format_func={"step": "step", "tokens": "tokens", "time": "wall time"}.get,
                  help="tokens seen: running sum of tokens/count; wall time: minutes since the run's first step")
log_y = c3.toggle("Log scale (y)", key="dynamics_log", help="Every chart; each chart also has its own "
                  "linear/log switch (top right). Values ≤ 0 lose their points")
controls.seed_from_url("dynamics_group", "group", lambda v: v == "1")
grouped = c4.toggle("Mean across seeds", key="dynamics_group", disabled=len(ctx.selected) < 2,
                    help="Runs that differ only in their seed as one curve each: the mean with its 95 % band, "
                         "groups as on the Sweep page (every setting that differs)")
controls.set_url(group="1" if grouped else None)
groups = None
if grouped and len(ctx.selected) > 1:
    metrics = sweep_stats.sweep(sweep_stats.selection_version(ctx.table, ctx.selected))[0]
    groups = dict(zip(metrics["run"], metrics["label"]))
controls.set_url(range=None if step_range == controls.FULL_RANGE else
                 f"{step_range[0]}-{min(step_range[1], max_step)}",
                 smooth=None if alpha == controls.SMOOTHING else f"{alpha:g}", metrics=extra or None,
                 x=None if x_axis == "step" else x_axis, log="1" if log_y else None)


@st.fragment(run_every=ctx.refresh)
def charts() -> None:
    raw, problems = frames.scalars_frame(ctx)
    controls.show_problems(problems)
    lines = views.dynamics_panels(ctx, alpha, step_range, tuple(extra), log_y, x_axis, groups)
    if groups:
        labels = sorted(set(groups.values()))
        note = '<span style="font-size:0.8rem;color:#555">mean across seeds, 95 % band</span>'
        legend = fig.legend_html(views.group_colors(labels), labels)
    else:
        note = f'<span style="font-size:0.8rem;color:#555">faint: raw · solid: EMA {alpha:g}</span>' if alpha else ""
        legend = fig.legend_html(ctx.colors, ctx.selected)
    st.markdown(legend.replace("</div>", note + "</div>"), unsafe_allow_html=True)
    st.plotly_chart(lines, key="dynamics_panels", theme=None)
    # Drawn only when opened (a lazy expander: Streamlit runs its body only then): its 6 subplots below the fold
    # were a third of a warm visit's browser CPU (benchmarks/RESULTS.md, issue 30, session 11).
    box = st.expander("Clip fractions per branch and side", key="dynamics_clip", on_change="rerun")
    controls.set_url(clip="1" if box.open else None)
    if box.open:
        box.plotly_chart(views.dynamics_clip(ctx, alpha, step_range, x_axis), key="dyn_clip", theme=None)
        box.markdown(fig.CLIP_DEFINITIONS)
    left, right = st.columns([3, 1])
    chart = left.selectbox("CSV of a chart", [*extra, *(m for m, *_ in views.PANELS), "clip fractions"],
                           key="dynamics_csv")
    metric = "clip/" if chart == "clip fractions" else chart
    # made on click (Streamlit calls it then), not on every rerun: the frames cost ~0.05 s at 1000 steps
    csv = partial(views.dynamics_csv, views.versions(ctx), metric, alpha, step_range, x_axis)
    right.download_button("Download CSV", csv, file_name=f"{chart.replace('/', '_')}.csv", mime="text/csv",
                          key="dynamics_csv_button", on_click="ignore")


charts()
