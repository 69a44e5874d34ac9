"""Training curves overlaid across runs: frame → figure functions (pure; no Streamlit, no file I/O).

Input frames are long: one row per (run, step) with a `run` column (the run's display name), a `step` column
and metric columns named as in dhpo_suite.runs.metrics (e.g. "entropy/mean").
"""

from __future__ import annotations

import zlib
from typing import Sequence, TypeVar

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import qualitative
from plotly.subplots import make_subplots

from dhpo_suite.dashboard.figures.grid import axis_suffix

__all__ = ["run_colors", "ema", "prepare", "x_values", "curve_table", "X_AXES", "log_buttons", "minmax_positions",
           "thin", "line_overlay", "overlay", "clip_fractions", "empty_figure", "axis_title", "is_fraction", "axes",
           "legend_html", "text_color", "CLIP_DEFINITIONS", "MAX_POINTS"]

Frameish = TypeVar("Frameish", pd.Series, pd.DataFrame)
PALETTE = qualitative.Plotly + qualitative.D3
_UNITS = {"entropy/": "nats", "length/": "tokens", "kl/": "nats", "w/": "weight in [0, 1]", "ratio/": "ratio",
          "reward/": "reward", "adv/": "advantage", "grad_norm": "L2 norm", "lr": "learning rate",
          "loss/": "loss", "tokens/": "tokens", "responses/": "responses", "groups/count": "groups",
          "time/": "seconds", "throughput/": "per second"}


def is_fraction(metric: str) -> bool:
    """Metrics that are shares of tokens, responses or groups (drawn as percentages)."""
    return metric.endswith("_frac") or metric.startswith("clip/") or "frac_" in metric


def axis_title(metric: str, fits: int = 32) -> str:
    """The y-axis title of a metric: its name and unit (e.g. "length/mean (tokens)", "clip/... (% of tokens)");
    past `fits` characters (what a 320 px chart's axis shows at 12 px) the name loses its family prefix."""
    if is_fraction(metric):
        unit = ("% of "
                f"{'groups' if metric.startswith('groups/') else 'responses' if 'truncated' in metric else 'tokens'}")
    else:
        unit = next((u for prefix, u in _UNITS.items() if metric.startswith(prefix)), None)
    title = f"{metric} ({unit})" if unit else metric
    return title if len(title) <= fits else f"{metric.rsplit('/', 1)[-1]} ({unit})" if unit else metric


X_AXES = {"step": "training step", "tokens": "response tokens seen (cumulative tokens/count)",
          "time": "wall time since the run's first step (minutes)"}
"""The x-axis choices of the curves (TensorBoard's step / relative / wall): key → axis title."""
X_SOURCE = {"tokens": "tokens/count", "time": "time"}
"""The scalar each non-step x-axis is computed from (a run without it cannot be drawn on that axis)."""


def x_values(frame: pd.DataFrame, kind: str) -> pd.Series:
    """Per row, the x of `kind` (X_AXES) within its run: the step; the running sum of the response tokens the
    updates saw (`tokens/count`) up to and including the step; or minutes since the run's first step (`time`)."""
    if kind == "step":
        return frame["step"]
    if kind not in X_SOURCE:
        raise ValueError(f"x axis must be one of {sorted(X_AXES)}, got {kind!r}")
    col = X_SOURCE[kind]
    if col not in frame.columns:
        return pd.Series(np.nan, index=frame.index)
    ordered = frame.sort_values(["run", "step"], kind="stable")
    by_run = ordered.groupby("run", sort=False)[col]
    x = by_run.cumsum() if kind == "tokens" else (ordered[col] - by_run.transform("min")) / 60.0
    return x.reindex(frame.index)


def curve_table(raw: pd.DataFrame, smoothed: pd.DataFrame, columns: Sequence[str], x: str = "step",
                smoothing: float = 0.0) -> pd.DataFrame:
    """What a chart shows, as a table (its CSV): every run and step of `raw` (prepare()d, not thinned), the
    chosen x when it is not the step, each column's raw value and, when smoothing, its EMA beside it."""
    out = raw[["run", "step", *columns]].copy()
    if x != "step":
        out.insert(2, X_AXES[x], raw["x"])
    if smoothing > 0:
        out = out.join(smoothed[list(columns)].add_suffix(f" (EMA {smoothing:g})"))
    return out


def log_buttons(log_y: bool = False) -> list[dict]:
    """A per-chart y-scale switch drawn by Plotly itself (linear / log): no rerun, no server round trip."""
    return [dict(type="buttons", direction="right", x=1.0, xanchor="right", y=1.02, yanchor="bottom",
                 showactive=True, active=int(log_y), pad=dict(r=0, t=0, b=0, l=0), font=dict(size=9),
                 buttons=[dict(label="linear", method="relayout", args=[{"yaxis.type": "linear"}]),
                          dict(label="log", method="relayout", args=[{"yaxis.type": "log"}])])]


def axes(metric: str, log_y: bool = False, x: str = "step") -> dict:
    """Layout entries for a chart of `metric`: `x` (X_AXES) on x, the metric's title and unit on y; fractions as
    percentages (never "600µ")."""
    # ".3~g": 0.0005, not SI's "500µ", which reads as a unit
    y = dict(title=dict(text=axis_title(metric)), tickformat=".2~%" if is_fraction(metric) else ".3~g")
    return dict(xaxis=dict(title=dict(text=X_AXES[x])), yaxis=y | (dict(type="log") if log_y else {}))


def legend_html(colors: dict[str, str], runs: Sequence[str]) -> str:
    """One legend for the whole page (every chart uses the same colour per run): a row of coloured chips."""
    chips = "".join(f'<span style="display:inline-block;margin-right:1.2em"><span style="display:inline-block;'
                    f'width:1.6em;height:0.3em;vertical-align:middle;background:{colors[r]}"></span> {r}</span>'
                    for r in runs)
    return f'<div class="run-legend" style="font-size:0.9rem">{chips}</div>'


def run_colors(runs: Sequence[str]) -> dict[str, str]:
    """A colour per run that does not move while runs are added: each run (its path, in `runs`' order: the
    order in which they claim colours, oldest first) takes the palette entry its stable hash (CRC-32) points
    to, stepping on to the next free entry when an earlier run holds it. A run added later never takes an
    earlier run's colour, so a sweep that grows recolours nothing (issue 43: a colour was a run's position
    among all runs, and a new run that sorted first shifted every other one). Past len(PALETTE) runs,
    colours repeat."""
    out: dict[str, str] = {}
    taken: set[int] = set()
    for run in dict.fromkeys(runs):
        if len(taken) == len(PALETTE):
            taken.clear()
        first = zlib.crc32(str(run).encode()) % len(PALETTE)
        slot = next((first + k) % len(PALETTE) for k in range(len(PALETTE)) if (first + k) % len(PALETTE) not in taken)
        taken.add(slot)
        out[run] = PALETTE[slot]
    return out


def text_color(color: str) -> str:
    """Black or white, whichever reads better on `color` ('#rrggbb'; WCAG relative luminance)."""
    def lin(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    h = color.lstrip("#")
    lum = 0.2126 * lin(int(h[0:2], 16)) + 0.7152 * lin(int(h[2:4], 16)) + 0.0722 * lin(int(h[4:6], 16))
    return "#000000" if (lum + 0.05) / 0.05 > 1.05 / (lum + 0.05) else "#ffffff"


def ema(values: Frameish, alpha: float) -> Frameish:
    """Debiased exponential moving average s_t = α·s_{t−1} + (1−α)·x_t (TensorBoard's smoothing; α=0: raw), of
    a series or of each column of a frame.

    NaNs are skipped (they neither reset nor pull the average) and stay NaN in the output.
    """
    if not 0.0 <= alpha < 1.0:
        raise ValueError(f"smoothing must lie in [0, 1), got {alpha}")
    if alpha == 0.0:
        return values.astype(float)
    return values.astype(float).ewm(alpha=1.0 - alpha, adjust=True, ignore_na=True).mean().where(values.notna())


def prepare(frame: pd.DataFrame, columns: Sequence[str], alpha: float = 0.0,
            step_range: tuple[int, int] | None = None, x: str = "step") -> pd.DataFrame:
    """Keep `run`, `step`, `x` (the chosen x-axis, x_values over the whole run) and the present `columns`,
    restricted to `step_range`, smoothed per run (every step: the figures thin each curve for drawing
    afterwards, see `thin`)."""
    cols = [c for c in columns if c in frame.columns and c != "x"]
    out = frame.loc[:, ["run", "step", *cols]].assign(x=x_values(frame, x))
    if step_range is not None:
        out = out[(out["step"] >= step_range[0]) & (out["step"] <= step_range[1])]
    out = out.sort_values(["run", "step"], kind="stable").reset_index(drop=True)
    if alpha > 0 and cols:  # one EMA per run over all its columns: 2.4× faster than a transform per column
        out[cols] = pd.concat([ema(out.loc[i, cols], alpha) for i in out.groupby("run", sort=False).indices.values()])
    return out


MAX_POINTS = 400
"""Most points drawn per curve (the browser draws each one; a 1000-step run's curve keeps its spikes)."""


def minmax_positions(y: np.ndarray, n: int = MAX_POINTS) -> np.ndarray:
    """Positions of at most n points of a series for drawing: the first and the last, and in each of
    (n − 2) / 2 equal buckets of consecutive points the smallest and the largest value (min/max decimation, as
    plotly-resampler's MinMaxAggregator): every spike and dip of the full series stays visible, at its step.
    NaNs count as neither (a bucket of NaNs keeps one, so a gap stays a gap). All positions when len(y) ≤ n."""
    y = np.asarray(y, dtype=float)
    m = len(y)
    if m <= n:
        return np.arange(m)
    buckets = max(1, (n - 2) // 2)
    size = -(-m // buckets)  # ceil: the last bucket is padded with NaN
    padded = np.full(buckets * size, np.nan)
    padded[:m] = y
    grid = padded.reshape(buckets, size)
    valid = ~np.isnan(grid)
    lows = np.where(valid, grid, np.inf).argmin(axis=1)
    highs = np.where(valid, grid, -np.inf).argmax(axis=1)
    offsets = np.arange(buckets) * size
    keep = np.concatenate(([0, m - 1], offsets + lows, offsets + highs))
    return np.unique(keep[keep < m])


def thin(x: np.ndarray, *ys: np.ndarray, n: int = MAX_POINTS, at: Sequence = ()) -> tuple[np.ndarray, ...]:
    """(x, y) of one curve thinned for drawing (`minmax_positions` of the first y; further ys, e.g. a hover's
    extra column, follow the same positions); the points whose x is in `at` (e.g. a marked step) are kept too."""
    x = np.asarray(x)
    keep = minmax_positions(ys[0], n)
    if len(at) and len(keep) < len(x):
        keep = np.union1d(keep, np.flatnonzero(np.isin(x, list(at))))
    return (x[keep], *(np.asarray(y)[keep] for y in ys))


def _xy(x, y, n: int = MAX_POINTS) -> dict[str, np.ndarray]:
    """x= and y= of a Scatter trace, thinned (see `thin`)."""
    tx, ty = thin(np.asarray(x), np.asarray(y, dtype=float), n=n)
    return {"x": tx, "y": ty}


def empty_figure(title: str, message: str) -> go.Figure:
    """A titled figure that says why it has no data (so a missing metric is visible, not silently absent)."""
    fig = go.Figure()
    fig.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper")
    fig.update_layout(title=title, xaxis_visible=False, yaxis_visible=False, height=260)
    return fig


def line_overlay(frame: pd.DataFrame, y: str, title: str, **kw) -> go.Figure:
    """`overlay(frame, y, title, **kw)` as a figure."""
    return go.Figure(overlay(frame, y, title, **kw))


def overlay(frame: pd.DataFrame, y: str, title: str, *, band: tuple[str, str] | None = None,
            extra: Sequence[tuple[str, str]] = (), colors: dict[str, str] | None = None,
            log_y: bool = False, legend: bool = True, raw: pd.DataFrame | None = None,
            smoothing: float = 0.0, x: str = "step") -> dict:
    """A chart as a plain dict, not validated (grid.grid validates a page's panels once, together): one line
    of `y` per run; optionally a shaded band between two columns (e.g. p10–p90) and extra dotted lines
    (column, label) in the run's colour (e.g. p90 next to a mean). With `raw` (the same rows unsmoothed) and
    smoothing > 0, each run's raw curve is drawn faint beneath its smoothed one, and each is labelled as what it
    is (TensorBoard's view). The hover lists every run at the point under the cursor, with full names;
    `legend=False` when the page draws one legend for all charts; a linear/log switch per chart."""
    if y not in frame.columns or frame[y].isna().all():
        return empty_figure(title, f"no data: {y} was not recorded").to_plotly_json()
    colors = colors or run_colors(frame["run"])
    what = f"{y} (EMA {smoothing:g})" if smoothing > 0 else y
    xcol = "x" if "x" in frame.columns else "step"
    traces = []  # plain dicts: a go.Scatter each validates on every property set
    for run, g in frame.groupby("run", sort=False):
        c, xs = colors[run], g[xcol].to_numpy()
        if band and all(b in g.columns for b in band) and g[list(band)].notna().any().all():
            # each edge thinned on its own values: the band's extremes survive on both sides
            traces.append(dict(type="scatter", **_xy(xs, g[band[1]]), mode="lines", line=dict(width=0),
                               showlegend=False, legendgroup=run, hoverinfo="skip", name=f"{run} {band[1]}"))
            traces.append(dict(type="scatter", **_xy(xs, g[band[0]]), mode="lines", line=dict(width=0),
                               fill="tonexty", fillcolor=_alpha(c, 0.18), legendgroup=run, showlegend=False,
                               name=f"{run} {band[0]}–{band[1]}", hoverinfo="skip"))
        if raw is not None and smoothing > 0 and y in raw.columns:
            r = raw[raw["run"] == run]
            # half the points of the smoothed curve (min/max: its spikes stay): the raw curve is context
            traces.append(dict(type="scatter", **_xy(r[xcol].to_numpy() if xcol in r else r["step"].to_numpy(),
                                                     r[y], n=MAX_POINTS // 2),
                               mode="lines", name=f"{run} raw", legendgroup=run, showlegend=False,
                               line=dict(color=_alpha(c, 0.3), width=1), meta=f"{y} raw",
                               hovertemplate=f"{run} · {y} (raw) = %{{y:.4~g}}<extra></extra>"))
        traces.append(dict(type="scatter", **_xy(xs, g[y]), mode="lines", name=run, legendgroup=run,
                           line=dict(color=c), meta=y, hovertemplate=f"{run} · {what} = %{{y:.4~g}}<extra></extra>"))
        for col, label in extra:
            if col in g.columns and g[col].notna().any():
                traces.append(dict(type="scatter", **_xy(xs, g[col]), mode="lines", name=f"{run} {label}",
                                   legendgroup=run, showlegend=False, line=dict(color=c, dash="dot"), meta=col,
                                   hovertemplate=f"{run} · {col} = %{{y:.4~g}}<extra></extra>"))
    return dict(data=traces, layout=dict(
        title=dict(text=title, font=dict(size=14)), height=320, margin=dict(t=60, b=40, l=60, r=10),
        showlegend=legend, legend=dict(orientation="h", y=-0.3), hovermode="x unified",
        hoverlabel=dict(namelength=-1), updatemenus=log_buttons(log_y), **axes(y, log_y, x)))


CLIP_DEFINITIONS = (
    "**outside** (dashed): share of the step's valid tokens whose ratio of this branch lies outside its trust "
    "region [1−ε_low, 1+ε_high] (low side: below 1−ε_low, high side: above 1+ε_high).  \n"
    "**binding** (solid): share of tokens whose gradient the clip removes: outside on the side the advantage "
    "pushes towards (A<0 below the region, A>0 above it), so binding ≤ outside for the token and sequence "
    "branches.  \n"
    "**mixed** row of a *branch-clip* DHPO run (eq. 11): the mix m = w·r + (1−w)·s has no trust region of its "
    "own; *outside* is m against the token ε range, for reference only, and *surrogate clipped* counts tokens "
    "whose min() took the clipped side (either branch clipped) — it can exceed *outside*. In a *unified-clip* "
    "run the mixed row is the one clip that acts."
)


def clip_fractions(frame: pd.DataFrame, branches: Sequence[str], colors: dict[str, str] | None = None,
                   clip_modes: dict[str, str] | None = None, x: str = "step") -> go.Figure:
    """Clip fractions per branch (rows) and side (columns): outside-region dashed, binding solid (percent of
    valid tokens). See CLIP_DEFINITIONS; `clip_modes` (run → "branch" | "unified") relabels the mixed row of
    branch-clip runs, where "binding" means "the surrogate's clipped side is active", not "m outside".

    Columns read: clip/{branch}/outside_{side} and clip/{branch}/binding_{side}.
    """
    branches = [b for b in branches if f"clip/{b}/outside_low" in frame.columns]
    if not branches:
        return empty_figure("Clip fractions", "no data: clip fractions were not recorded")
    colors = colors or run_colors(frame["run"])
    clip_modes = clip_modes or {}
    layout = make_subplots(rows=len(branches), cols=2, shared_xaxes=True, vertical_spacing=0.08,
                           subplot_titles=[f"{b} · {s} side" for b in branches for s in ("low", "high")]
                           ).layout.to_plotly_json()
    traces = []  # plain dicts, validated once by go.Figure (see line_overlay)
    for r, branch in enumerate(branches):
        for c, side in enumerate(("low", "high")):
            n = axis_suffix(2 * r + c)
            layout["yaxis" + n].update(title=dict(text="% of tokens"), tickformat=".2~%", rangemode="tozero")
            for run, g in frame.groupby("run", sort=False):
                branch_clip = branch == "mixed" and clip_modes.get(run) == "branch"
                for kind, dash in (("outside", "dash"), ("binding", "solid")):
                    col = f"clip/{branch}/{kind}_{side}"
                    if col not in g.columns or g[col].isna().all():
                        continue
                    label = {"outside": "m outside token ε (reference)", "binding": "surrogate clipped"}[kind] \
                        if branch_clip else kind
                    traces.append(dict(
                        type="scatter", **_xy(g["x" if "x" in g else "step"], g[col]), mode="lines",
                        name=f"{run} · {label}", legendgroup=f"{run}{kind}", xaxis="x" + n, yaxis="y" + n,
                        showlegend=(r == 0 and c == 0) or (branch_clip and c == 0),
                        line=dict(color=colors[run], dash=dash), meta=col,
                        hovertemplate=f"{run} · {branch} {label} ({side}) = %{{y:.3~%}}<extra></extra>"))
    for i in (2 * len(branches) - 2, 2 * len(branches) - 1):  # the bottom row's x axes
        layout["xaxis" + axis_suffix(i)]["title"] = dict(text=X_AXES[x])
    layout.update(title=dict(text="Clip fractions per branch (dashed: outside the region, solid: binding)"),
                  height=220 * len(branches) + 100, margin=dict(t=70, b=40, l=60, r=10),
                  legend=dict(orientation="h", y=-0.08), hovermode="x unified", hoverlabel=dict(namelength=-1))
    return go.Figure(data=traces, layout=layout)


def _alpha(color: str, a: float) -> str:
    """'#rrggbb' or 'rgb(r,g,b)' (the group palette's) → 'rgba(r,g,b,a)'."""
    if color.startswith("rgb("):
        return f"rgba({color[4:-1]},{a})"
    h = color.lstrip("#")
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r},{g},{b},{a})"
