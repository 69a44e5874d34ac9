"""Compare runs: training curves of the selected runs overlaid (one colour per run on every chart, one
legend), raw and smoothed both drawn and labelled, any logged metric on demand, x-axis choice (step, tokens
seen, wall time), a linear/log switch on every chart, the CSV of any chart; the view lives in the URL."""

from functools import partial

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dhpo_suite.dashboard import controls, data, frames
from dhpo_suite.dashboard.figures import curves as fig
from dhpo_suite.dashboard.figures.evaluation import accuracy_curve
from dhpo_suite.dashboard.figures.grid import grid
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
step_range, alpha = controls.step_controls(max_step, "dynamics")
logged = [c for c in frame.columns if c not in ("run", "step", "time") and frame[c].notna().any()]
controls.seed_from_url("dynamics_metrics", "metrics", lambda v: [m for m in v.split(",") if m in logged])
axes = [k for k in fig.X_AXES if k == "step" or fig.X_SOURCE[k] in frame.columns]
controls.seed_from_url("dynamics_x", "x", lambda v: v if v in axes else None)
controls.seed_from_url("dynamics_log", "log", lambda v: v == "1")
controls.seed_from_url("dynamics_clip", "clip", lambda v: v == "1")
c1, c2, c3 = st.columns([4, 2.5, 1.5])  # the toggle's label whole at 1280 px
extra = c1.multiselect("Plot any logged metric", logged, key="dynamics_metrics",
                       format_func=lambda m: f"{m} — {METRICS[m]}" if m in METRICS else m,
                       help="Every scalar the runs logged (held-out reward, lr, loss, advantage statistics, "
                            "throughput, ...), one chart each")
x_axis = c2.radio("x axis", axes, key="dynamics_x", horizontal=True,
                  format_func={"step": "step", "tokens": "tokens seen", "time": "wall time"}.get,
                  help="tokens seen: running sum of tokens/count; wall time: minutes since the run's first step")
log_y = c3.toggle("Log scale (y)", key="dynamics_log", help="Every chart; each chart also has its own "
                  "linear/log switch (top right). Values ≤ 0 lose their points")
controls.set_url(range=None if step_range[1] >= 10**12 and step_range[0] == 0 else
                 f"{step_range[0]}-{min(step_range[1], max_step)}",
                 smooth=None if alpha == 0.6 else f"{alpha:g}", metrics=extra or None,
                 x=None if x_axis == "step" else x_axis, log="1" if log_y else None)
PANELS = [  # (metric, title, band, extra lines); titles fit half of a 1280 px page
    ("entropy/mean", "Token entropy: p10–p90 band", ("entropy/p10", "entropy/p90"), ()),
    ("length/mean", "Response length: p90 dotted", None, (("length/p90", "p90"),)),
    ("length/truncated_frac", "Truncation rate", None, ()),
    ("reward/mean", "Reward (mean per response)", None, ()),
    ("w/mean", "Mixing weight w: p10–p90 band", ("w/p10", "w/p90"), (("w/p50", "p50"),)),
    ("kl/k3", "KL(π_old‖π), k3: k1 dotted", None, (("kl/k1", "k1"),)),
    ("grad_norm", "Gradient norm (before clipping)", None, ()),
]


def _frames(versions: tuple, alpha: float, step_range: tuple, x_axis: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    raw = pd.concat([data.scalars(path, v)[0].assign(run=run) for run, path, v in versions], ignore_index=True)
    cols = list(raw.columns.drop(["run", "step"]))
    return fig.prepare(raw, cols, 0.0, step_range, x_axis), fig.prepare(raw, cols, alpha, step_range, x_axis)


@st.cache_resource(max_entries=32, show_spinner=False)  # figures are only read (st.plotly_chart copies them)
def panels(versions: tuple, evals: pd.DataFrame, alpha: float, step_range: tuple, colors: tuple,
           extra: tuple, log_y: bool, x_axis: str) -> go.Figure:
    """The panels as one figure of subplots (the browser's cost is per figure). `versions`: (run, path,
    run_version) of each selected run, the cache key of their scalars (hashing the scalars frame itself cost
    ~30 ms per rerun at 1000 steps)."""
    raw, f = _frames(versions, alpha, step_range, x_axis)
    colors = dict(colors)
    common = dict(colors=colors, log_y=log_y, legend=False, raw=raw, smoothing=alpha, x=x_axis)
    out = [fig.overlay(f, m, m, **common) for m in extra]
    out += [fig.overlay(f, m, title, band=band, extra=list(more), **common) for m, title, band, more in PANELS[:4]]
    out.append(accuracy_curve(evals, colors=colors))
    out += [fig.overlay(f, m, title, band=band, extra=list(more), **common) for m, title, band, more in PANELS[4:]]
    return grid(out)


@st.cache_resource(max_entries=32, show_spinner=False)
def clip_panel(versions: tuple, alpha: float, step_range: tuple, colors: tuple, clip_modes: tuple,
               x_axis: str) -> go.Figure:
    """The clip fractions of the selected runs (6 subplots, ~12 traces per run)."""
    f = _frames(versions, alpha, step_range, x_axis)[1]
    return fig.clip_fractions(f, ("token", "sequence", "mixed"), colors=dict(colors), clip_modes=dict(clip_modes),
                              x=x_axis)


def csv_of(versions: tuple, metric: str, alpha: float, step_range: tuple, x_axis: str) -> bytes:
    """The chart of `metric` ("clip/": the clip fractions) as CSV (figures.curves.curve_table)."""
    raw, f = _frames(versions, alpha, step_range, x_axis)
    cols = [c for c in raw.columns if c.startswith("clip/")] if metric == "clip/" else [metric] * (metric in raw)
    return fig.curve_table(raw, f, cols, x_axis, alpha).to_csv(index=False).encode()


@st.fragment(run_every=ctx.refresh)
def charts() -> None:
    raw, problems = frames.scalars_frame(ctx)
    controls.show_problems(problems)
    colors = tuple((r, ctx.colors[r]) for r in ctx.selected)
    versions = tuple((r, ctx.path(r), data.run_version(ctx.path(r))) for r in ctx.selected)
    lines = panels(versions, frames.evals_frame(ctx)[0], alpha, step_range, colors, tuple(extra), log_y, x_axis)
    note = f'<span style="font-size:0.8rem;color:#555">faint: raw · solid: EMA {alpha:g}</span>' if alpha > 0 else ""
    st.markdown(fig.legend_html(ctx.colors, ctx.selected).replace("</div>", note + "</div>"), unsafe_allow_html=True)
    st.plotly_chart(lines, key="dynamics_panels", theme=None)
    # Drawn only when opened (a lazy expander: Streamlit runs its body only then): its 6 subplots below the fold
    # were a third of a warm visit's browser CPU (benchmarks/RESULTS.md, issue 30, session 11).
    box = st.expander("Clip fractions per branch and side", key="dynamics_clip", on_change="rerun")
    controls.set_url(clip="1" if box.open else None)
    if box.open:
        modes = tuple((r, str(ctx.table.at[r, "clip"])) for r in ctx.selected)
        box.plotly_chart(clip_panel(versions, alpha, step_range, colors, modes, x_axis), key="dyn_clip", theme=None)
        box.markdown(fig.CLIP_DEFINITIONS)
    left, right = st.columns([3, 1])
    chart = left.selectbox("CSV of a chart", [*extra, *(m for m, *_ in PANELS), "clip fractions"], key="dynamics_csv")
    metric = "clip/" if chart == "clip fractions" else chart
    # made on click (Streamlit calls it then), not on every rerun: the frames cost ~0.05 s at 1000 steps
    right.download_button("Download CSV", partial(csv_of, versions, metric, alpha, step_range, x_axis),
                          file_name=f"{chart.replace('/', '_')}.csv", mime="text/csv", key="dynamics_csv_button",
                          on_click="ignore")


charts()
