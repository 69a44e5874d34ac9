"""Training curves overlaid across runs: frame → figure functions (pure; no Streamlit, no file I/O).

Input frames are long: one row per (run, step) with a `run` column (the run's display name), a `step` column
and metric columns named as in dhpo_suite.runs.metrics (e.g. "entropy/mean").
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

__all__ = ["run_colors", "ema", "prepare", "line_overlay", "clip_fractions", "empty_figure"]

PALETTE = qualitative.Plotly + qualitative.D3


def run_colors(runs: Sequence[str]) -> dict[str, str]:
    """A stable colour per run (by order of first appearance), shared by every chart of a page."""
    return {r: PALETTE[i % len(PALETTE)] for i, r in enumerate(dict.fromkeys(runs))}


def ema(values: pd.Series, alpha: float) -> pd.Series:
    """Debiased exponential moving average s_t = α·s_{t−1} + (1−α)·x_t (TensorBoard's smoothing; α=0: raw).

    NaNs are skipped (they neither reset nor pull the average) and stay NaN in the output.
    """
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"smoothing must lie in [0, 1), got {alpha}")
    if alpha == 0.0:
        return values.astype(float)
    return values.astype(float).ewm(alpha=1.0 - alpha, adjust=True, ignore_na=True).mean().where(values.notna())


def prepare(frame: pd.DataFrame, columns: Sequence[str], alpha: float = 0.0,
            step_range: tuple[int, int] | None = None, max_points: int | None = 500) -> pd.DataFrame:
    """Keep `run`, `step` and the present `columns`, restricted to `step_range`, smoothed per run, then thinned
    to at most `max_points` evenly spaced steps per run (first and last kept; None: all).

    Thinning happens after smoothing, so the curve is that of every step; like TensorBoard's sampling it
    can skip a single-step spike of a raw (unsmoothed) curve: narrow the step range to see every step.
    The browser draws each point, so this bounds the cost of long runs.
    """
    cols = [c for c in columns if c in frame.columns]
    out = frame.loc[:, ["run", "step", *cols]]
    if step_range is not None:
        out = out[(out["step"] >= step_range[0]) & (out["step"] <= step_range[1])]
    out = out.sort_values(["run", "step"], kind="stable")
    if alpha > 0 and cols:
        out[cols] = out.groupby("run", sort=False)[cols].transform(lambda s: ema(s, alpha))
    if max_points is not None:
        out = out.loc[[i for _, g in out.groupby("run", sort=False) for i in g.index[_keep(len(g), max_points)]]]
    return out.reset_index(drop=True)


def _keep(m: int, n: int) -> np.ndarray:
    """Positions of at most n evenly spaced rows out of m (first and last included)."""
    return np.arange(m) if m <= n else np.unique(np.linspace(0, m - 1, n).round().astype(int))


def empty_figure(title: str, message: str) -> go.Figure:
    """A titled figure that says why it has no data (so a missing metric is visible, not silently absent)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(title=title, xaxis_visible=False, yaxis_visible=False, height=260)
    return fig


def line_overlay(frame: pd.DataFrame, y: str, title: str, *, band: tuple[str, str] | None = None,
                 extra: Sequence[tuple[str, str]] = (), colors: dict[str, str] | None = None,
                 log_y: bool = False) -> go.Figure:
    """One line of `y` per run; optionally a shaded band between two columns (e.g. p10–p90) and extra
    dotted lines (column, label) in the run's colour (e.g. p90 next to a mean)."""
    if y not in frame.columns or frame[y].isna().all():
        return empty_figure(title, f"no data: {y} was not recorded")
    colors = colors or run_colors(frame["run"])
    traces = []  # one go.Figure(data=...) call: adding traces one by one re-validates the figure each time
    for run, g in frame.groupby("run", sort=False):
        c, x = colors[run], g["step"].to_numpy()
        if band and all(b in g.columns for b in band) and g[list(band)].notna().any().all():
            traces.append(go.Scatter(x=x, y=g[band[1]].to_numpy(), mode="lines", line_width=0, showlegend=False,
                                     legendgroup=run, hoverinfo="skip", name=f"{run} {band[1]}"))
            traces.append(go.Scatter(x=x, y=g[band[0]].to_numpy(), mode="lines", line_width=0, fill="tonexty",
                                     fillcolor=_alpha(c, 0.18), legendgroup=run, showlegend=False,
                                     name=f"{run} {band[0]}–{band[1]}", hoverinfo="skip"))
        traces.append(go.Scatter(x=x, y=g[y].to_numpy(), mode="lines", name=run, legendgroup=run, line_color=c))
        for col, label in extra:
            if col in g.columns and g[col].notna().any():
                traces.append(go.Scatter(x=x, y=g[col].to_numpy(), mode="lines", name=f"{run} {label}",
                                         legendgroup=run, showlegend=False, line=dict(color=c, dash="dot")))
    fig = go.Figure(data=traces, layout=dict(title=title, height=320, margin=dict(t=50, b=40, l=50, r=10),
                                             legend=dict(orientation="h", y=-0.25)))
    if log_y:
        fig.update_yaxes(type="log")
    return fig


def clip_fractions(frame: pd.DataFrame, branches: Sequence[str], colors: dict[str, str] | None = None) -> go.Figure:
    """Clip fractions per branch (rows) and side (columns): outside-region dashed, binding solid.

    Columns read: clip/{branch}/outside_{side} and clip/{branch}/binding_{side}. Outside ⊇ binding: a token
    outside the region only loses its gradient when the clipped side of the min is active.
    """
    branches = [b for b in branches if f"clip/{b}/outside_low" in frame.columns]
    if not branches:
        return empty_figure("Clip fractions", "no data: clip fractions were not recorded")
    colors = colors or run_colors(frame["run"])
    fig = make_subplots(rows=len(branches), cols=2, shared_xaxes=True, vertical_spacing=0.08,
                        subplot_titles=[f"{b} · {s}" for b in branches for s in ("low side", "high side")])
    traces, rows, cols = [], [], []  # added in one call (see line_overlay)
    for r, branch in enumerate(branches, start=1):
        for c, side in enumerate(("low", "high"), start=1):
            for run, g in frame.groupby("run", sort=False):
                for kind, dash in (("outside", "dash"), ("binding", "solid")):
                    col = f"clip/{branch}/{kind}_{side}"
                    if col not in g.columns:
                        continue
                    traces.append(go.Scatter(
                        x=g["step"].to_numpy(), y=g[col].to_numpy(), mode="lines", name=f"{run} · {kind}",
                        legendgroup=f"{run}{kind}", showlegend=(r == 1 and c == 1),
                        line=dict(color=colors[run], dash=dash), meta=col))
                    rows.append(r)
                    cols.append(c)
    fig.add_traces(traces, rows=rows, cols=cols)
    fig.update_layout(title="Clip fractions (dashed: outside the region, solid: binding)",
                      height=220 * len(branches) + 80, margin=dict(t=70, b=40, l=50, r=10),
                      legend=dict(orientation="h", y=-0.08))
    return fig


def _alpha(color: str, a: float) -> str:
    """'#rrggbb' → 'rgba(r,g,b,a)'."""
    h = color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{a})"

