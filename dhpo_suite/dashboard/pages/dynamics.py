"""Compare runs: training curves of the selected runs overlaid (one colour per run on every chart, one
legend), any logged metric on demand, log scale, smoothing and a step range."""

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dhpo_suite.dashboard import controls, data, frames
from dhpo_suite.dashboard.figures import curves as fig
from dhpo_suite.dashboard.figures.evaluation import accuracy_curve
from dhpo_suite.runs.metrics import METRICS

ctx = controls.context()
st.title("Dynamics")
if not ctx.selected:
    st.info("Pick one or more runs in the sidebar.")
    st.stop()
frame, _ = frames.scalars_frame(ctx)
step_range, alpha = controls.step_controls(int(frame["step"].max()) if len(frame) else 0, "dynamics")
logged = [c for c in frame.columns if c not in ("run", "step", "time") and frame[c].notna().any()]
c1, c2 = st.columns([4, 1])
extra = c1.multiselect("Plot any logged metric", logged, key="dynamics_metrics",
                       format_func=lambda m: f"{m} — {METRICS[m]}" if m in METRICS else m,
                       help="Every scalar the runs logged (held-out reward, lr, loss, advantage statistics, "
                            "throughput, ...), one chart each")
log_y = c2.toggle("Log scale (y)", key="dynamics_log", help="Metrics with values ≤ 0 lose those points")
PANELS = [  # (metric, title, band, extra lines)
    ("entropy/mean", "Token entropy: mean, p10–p90 band", ("entropy/p10", "entropy/p90"), ()),
    ("length/mean", "Response length: mean (dotted: p90)", None, (("length/p90", "p90"),)),
    ("length/truncated_frac", "Truncation rate (responses cut at the length limit)", None, ()),
    ("reward/mean", "Reward (mean per response)", None, ()),
    ("w/mean", "Mixing weight w: mean, p10–p90 band (dotted: median)", ("w/p10", "w/p90"), (("w/p50", "p50"),)),
    ("kl/k3", "KL(π_old‖π), k3 estimator (dotted: k1)", None, (("kl/k1", "k1"),)),
    ("grad_norm", "Gradient norm (before clipping)", None, ()),
]


@st.cache_resource(max_entries=32, show_spinner=False)  # figures are only read (st.plotly_chart copies them)
def panels(versions: tuple, evals: pd.DataFrame, alpha: float, step_range: tuple, colors: tuple,
           extra: tuple, log_y: bool, clip_modes: tuple) -> list[go.Figure]:
    """The page's figures. `versions`: (run, path, run_version) of each selected run, the cache key of their
    scalars (hashing the scalars frame itself cost ~30 ms per rerun at 1000 steps)."""
    raw = pd.concat([data.scalars(path, v)[0].assign(run=run) for run, path, v in versions], ignore_index=True)
    f = fig.prepare(raw, list(raw.columns.drop(["run", "step"])), alpha, step_range)
    colors = dict(colors)
    out = [fig.line_overlay(f, m, m + ": " + METRICS.get(m, m), colors=colors, log_y=log_y, legend=False)
           for m in extra]
    out += [fig.line_overlay(f, m, title, band=band, extra=list(more), colors=colors, log_y=log_y, legend=False)
            for m, title, band, more in PANELS[:4]]
    out.append(accuracy_curve(evals, colors=colors))
    out += [fig.line_overlay(f, m, title, band=band, extra=list(more), colors=colors, log_y=log_y, legend=False)
            for m, title, band, more in PANELS[4:]]
    out.append(fig.clip_fractions(f, ("token", "sequence", "mixed"), colors=colors, clip_modes=dict(clip_modes)))
    return out


@st.fragment(run_every=ctx.refresh)
def charts() -> None:
    raw, problems = frames.scalars_frame(ctx)
    controls.show_problems(problems)
    colors = tuple((r, ctx.colors[r]) for r in ctx.selected)
    modes = tuple((r, str(ctx.table.at[r, "clip"])) for r in ctx.selected)
    versions = tuple((r, ctx.path(r), data.run_version(ctx.path(r))) for r in ctx.selected)
    *lines, clip = panels(versions, frames.evals_frame(ctx)[0], alpha, step_range, colors, tuple(extra), log_y, modes)
    st.markdown(fig.legend_html(ctx.colors, ctx.selected), unsafe_allow_html=True)
    for i in range(0, len(lines), 2):
        for j, (col, panel) in enumerate(zip(st.columns(2), lines[i : i + 2])):
            col.plotly_chart(panel, key=f"dynamics_{i + j}", theme=None)
    st.plotly_chart(clip, key="dyn_clip", theme=None)
    with st.expander("What outside and binding mean"):
        st.markdown(fig.CLIP_DEFINITIONS)


charts()
