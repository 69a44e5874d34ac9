"""Entropy-collapse figures: the detector's view, group outcomes and the entropy-percentile split (pure)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from dhpo_suite.science import Collapse
from dhpo_suite.dashboard.figures.curves import axis_title, empty_figure, run_colors, thin
from dhpo_suite.dashboard.figures.grid import axis_suffix

WHY_ROWS = (
    ("token entropy (nats)", ("entropy/mean",)),
    ("response length (tokens)", ("length/mean",)),
    ("binding clip (% of tokens)", ("clip/token/binding", "clip/sequence/binding", "clip/mixed/binding")),
    ("KL k3 (nats)", ("kl/k3",)),
    ("groups without signal (%)", ("groups/all_correct_frac", "groups/all_wrong_frac")),
)
"""The rows of the "why" figure: (y title, metrics); several metrics in a row differ by dash."""
_CLICKABLE = ("entropy/mean", "length/mean")
"""Rows whose points can be clicked (markers drawn)."""
WHY_POINTS = 200
"""Most points per curve of the five-row chart (min/max thinning keeps every spike, and the detected steps are
kept as well; the clickable rows draw a marker per point, the chart's main cost in the browser: ~0.17 s of CPU
at 500 points, ~0.10 s at 200). A step between two markers is typed in the step box."""
_STYLE = {"clip/token/binding": ("token clip", "solid"), "clip/sequence/binding": ("sequence clip", "dot"),
          "clip/mixed/binding": ("mixed (surrogate clipped)", "dash"),
          "groups/all_correct_frac": ("all correct", "solid"), "groups/all_wrong_frac": ("all wrong", "dash")}
"""(name, line dash) of the metrics that share a row."""


def why_figure(frame: pd.DataFrame, verdicts: dict[str, Collapse], colors: dict[str, str] | None = None) -> go.Figure:
    """Did it collapse, when, why: entropy, length, binding clip per branch, KL and all-correct / all-wrong
    groups on one shared step axis (one row each, WHY_ROWS), each run's collapse step marked across all rows.
    The points of the entropy and length rows are clickable (the page opens the clicked step's tokens and
    responses). Assembled as plain dicts and validated once (as figures.curves.overlay)."""
    rows = [(title, [m for m in metrics if m in frame.columns and frame[m].notna().any()])
            for title, metrics in WHY_ROWS]
    rows = [(t, ms) for t, ms in rows if ms]
    if not rows:
        return empty_figure("Collapse: when and why", "no data: none of entropy, length, clip, KL, groups recorded")
    colors = colors or run_colors(frame["run"])
    layout = make_subplots(rows=len(rows), cols=1, shared_xaxes=True, vertical_spacing=0.03).layout.to_plotly_json()
    traces = []
    for run, g in frame.groupby("run", sort=False):
        x = g["step"].to_numpy()
        v = verdicts.get(run)
        marked = [s for s in (v.step, v.entropy.step, v.length.step) if s is not None] if v is not None else []
        for r, (title, metrics) in enumerate(rows):
            for m in metrics:
                if g[m].isna().all():  # e.g. no mixed branch in a baseline run
                    continue
                label, dash = _STYLE.get(m, (m, "solid"))
                tx, ty = thin(x, g[m].to_numpy(dtype=float), n=WHY_POINTS, at=marked)
                traces.append(dict(
                    type="scatter", x=tx, y=ty, name=run, legendgroup=run,
                    # Streamlit selects markers only; on every row they would cost ~8000 SVG nodes to draw
                    mode="lines+markers" if m in _CLICKABLE else "lines", marker=dict(size=3),
                    showlegend=r == 0 and m == metrics[0], line=dict(color=colors[run], dash=dash),
                    meta=m, hovertemplate=f"{run} · {label} = %{{y:.4~{'%' if 'frac' in m or 'clip' in m else 'g'}}}"
                                          "<extra></extra>", xaxis="x" + axis_suffix(r), yaxis="y" + axis_suffix(r)))
    for r, (title, metrics) in enumerate(rows):
        fraction = any("frac" in m or m.startswith("clip/") for m in metrics)
        layout["yaxis" + axis_suffix(r)].update(
            title=dict(text=title if len(metrics) > 1 else axis_title(metrics[0]), font=dict(size=11)),
            tickformat=".2~%" if fraction else ".3~g")
    layout["xaxis" + axis_suffix(len(rows) - 1)]["title"] = dict(
        text="training step (click a point of the entropy or length row: that step opens below)")
    styles = "; ".join(" ".join(_STYLE[m]) for _, ms in rows for m in ms if m in _STYLE)
    shapes, notes = _onsets(rows, verdicts, colors)
    # the line styles on a second, smaller title line: one line clipped at both ends on a 1280 px screen
    layout.update(title=dict(text=f"Collapse: when and why<br><sup>{styles}</sup>", x=0.01, xanchor="left"),
                  height=170 * len(rows) + 120, shapes=shapes, annotations=notes,
                  # "closest": a click reports the point under the cursor (unified hover reports another run's)
                  margin=dict(t=100, b=50, l=70, r=10), hovermode="closest", hoverlabel=dict(namelength=-1),
                  legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0, xanchor="left"),
                  clickmode="event+select")
    return go.Figure(data=traces, layout=layout)


def _onsets(rows: list, verdicts: dict[str, Collapse], colors: dict[str, str]) -> tuple[list[dict], list[dict]]:
    """(shapes, annotations) of the verdict's steps: the entropy onset on the entropy row and the length onset
    on the length row (dotted, labelled; unless it is the run's step), and the run's collapse (both have
    collapsed) across every row (dashed). An entropy-only collapse ("entropy collapsed at step s; length held")
    is thus marked, at s, on its row."""
    row_of = {ms[0]: r for r, (_, ms) in enumerate(rows)}

    def line(r: int, step: int, color: str, dash: str) -> dict:  # a vertical line across row r
        n = axis_suffix(r)
        return dict(type="line", x0=step, x1=step, y0=0, y1=1, xref="x" + n, yref=f"y{n} domain",
                    line=dict(color=color, dash=dash, width=2))

    shapes, notes = [], []
    for run, v in verdicts.items():
        if run not in colors:
            continue
        for metric, onset, what in (("entropy/mean", v.entropy.step, "entropy"),
                                    ("length/mean", v.length.step, "length")):
            if onset is not None and metric in row_of and onset != v.step:  # the run's line marks it already
                shapes.append(line(row_of[metric], onset, colors[run], "dot"))
                notes.append(dict(text=f"{run}: {what} from {onset}", font=dict(color=colors[run], size=11),
                                  x=onset, y=1, xanchor="left", yanchor="top", showarrow=False,
                                  xref=shapes[-1]["xref"], yref=shapes[-1]["yref"]))
        if v.step is not None:
            shapes += [line(r, v.step, colors[run], "dash") for r in range(len(rows))]
            notes.append(dict(x=v.step, y=1.0, yref="paper", text=f"{run}: collapse @ {v.step}", showarrow=False,
                              xanchor="left", yanchor="bottom", font=dict(color=colors[run])))
    return shapes, notes


def clicked(points: list[dict], traces: tuple) -> tuple[str, int] | None:
    """(run, step) of a click on the "why" chart: Streamlit returns every point at the clicked place, and
    where curves overlap (two runs on the same plateau) that is several runs' points. The run is the one drawn
    on top there (the highest trace number), the one the reader sees and clicked; not the run already on view."""
    hits = [p for p in points if p.get("curve_number") is not None and p["curve_number"] < len(traces)]
    if not hits:
        return None
    top = max(hits, key=lambda p: p["curve_number"])
    return str(traces[top["curve_number"]].legendgroup), int(round(float(top["x"])))


__all__ = ["why_figure", "clicked", "WHY_ROWS", "entropy_percentiles", "EntropySplit", "entropy_split",
           "entropy_split_figure"]


def entropy_percentiles(frame: pd.DataFrame, run: str) -> go.Figure:
    """One run's token-entropy percentiles over steps (log scale): p10–p90 band, p50 and p99 lines, and the
    fraction of near-deterministic tokens (entropy < 0.01 nats) on the right axis."""
    g = frame[frame["run"] == run]
    if "entropy/p50" not in g.columns or g["entropy/p50"].isna().all():
        return empty_figure(f"Entropy percentiles · {run}", "no data: entropy was not recorded")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for col, style in (
        ("entropy/p90", dict(line_width=0, name="p90", showlegend=False)),
        ("entropy/p10", dict(line_width=0, fill="tonexty", fillcolor="rgba(99,110,250,0.2)", name="p10–p90")),
        ("entropy/p50", dict(name="p50 (median)", line_color="#636efa")),
        ("entropy/p99", dict(name="p99 (high-entropy minority)", line=dict(color="#ef553b"))),
        ("entropy/frac_below_0.01", dict(name="fraction < 0.01 nats", line=dict(color="#7f7f7f", dash="dot"))),
    ):
        if "frac" not in col or col in g.columns:
            x, y = thin(g["step"].to_numpy(), g[col].to_numpy(dtype=float))  # each curve on its own extremes
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", **style), secondary_y="frac" in col)
    fig.update_yaxes(type="log", title_text="entropy (nats)", secondary_y=False)
    fig.update_yaxes(title_text="tokens below 0.01 nats (%)", range=[0, 1], tickmode="linear", dtick=0.2,
                     tickformat=".0%", showgrid=False, secondary_y=True)
    fig.update_xaxes(title_text="training step")
    fig.update_layout(title=f"Entropy percentiles · {run}", height=340,
                      margin=dict(t=50, b=40, l=50, r=50), legend=dict(orientation="h", y=-0.25))
    return fig


@dataclass(frozen=True)
class EntropySplit:
    """A step's tokens split at the q-quantile of entropy: the low-entropy majority and the high-entropy
    minority (the "forking" tokens). Means use bin centres (geometric for log bins)."""

    q: float
    threshold: float
    mean_low: float
    mean_high: float
    entropy_share_high: float
    """Fraction of the step's total entropy carried by the minority."""


def _centres(edges: np.ndarray) -> np.ndarray:
    lo, hi = edges[:-1], edges[1:]
    return np.where(lo > 0, np.sqrt(np.maximum(lo, 1e-300) * hi), (lo + hi) / 2)


def entropy_split(edges: np.ndarray, counts: np.ndarray, q: float = 0.8) -> EntropySplit:
    """Split an entropy histogram at its q-quantile bin edge (whole bins: no bin is shared by both parts)."""
    edges, counts = np.asarray(edges, float), np.asarray(counts, float)
    total = counts.sum()
    if total == 0:
        return EntropySplit(q, float("nan"), float("nan"), float("nan"), float("nan"))
    cut = int(np.searchsorted(np.cumsum(counts), q * total, side="left")) + 1  # bins [0, cut) are the majority
    cut = min(cut, len(counts))
    mass = counts * _centres(edges)
    low_n, high_n = counts[:cut].sum(), counts[cut:].sum()
    return EntropySplit(
        q=q,
        threshold=float(edges[cut]),
        mean_low=float(mass[:cut].sum() / low_n) if low_n else float("nan"),
        mean_high=float(mass[cut:].sum() / high_n) if high_n else float("nan"),
        entropy_share_high=float(mass[cut:].sum() / mass.sum()) if mass.sum() > 0 else float("nan"),
    )


def entropy_split_figure(edges: np.ndarray, counts: np.ndarray, split: EntropySplit, title: str) -> go.Figure:
    """A step's entropy histogram as a step line on a log axis: majority grey, minority red, split marked. The
    first bin [0, 1e-6) cannot sit on a log axis; its share is given in the title instead."""
    edges, counts = np.asarray(edges, float), np.asarray(counts, float)
    frac = counts / max(counts.sum(), 1.0)
    fig = go.Figure()
    for name, sel, color in (("low-entropy majority", edges[1:] <= split.threshold, "#9e9e9e"),
                             ("high-entropy minority", edges[:-1] >= split.threshold, "#ef553b")):
        sel = sel & (edges[:-1] > 0)
        if not sel.any():
            continue
        idx = np.flatnonzero(sel)
        x = np.append(edges[idx], edges[idx[-1] + 1])
        y = np.append(frac[idx], frac[idx[-1]])
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line_shape="hv", fill="tozeroy", name=name,
                                 line_color=color))
    fig.add_vline(x=split.threshold, line=dict(dash="dash"),
                  annotation_text=f"p{round(split.q * 100)} = {split.threshold:.3g} nats")
    fig.update_xaxes(type="log", title_text="token entropy (nats)")
    fig.update_layout(title=f"{title} · {frac[0]:.0%} of tokens below 1e-6 nats", yaxis_title="fraction of tokens",
                      height=320, margin=dict(t=50, b=40, l=50, r=10), legend=dict(orientation="h", y=-0.35))
    return fig
