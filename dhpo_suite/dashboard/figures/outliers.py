"""Branch-outlier figures: log-ratio heatmaps over steps and the outlier-token table (pure)."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from dhpo_suite.dashboard.figures.curves import empty_figure

__all__ = ["carries_gradient", "heatmap_frame", "log_ratio_heatmap", "outlier_table", "binding_summary",
           "SUMMARY_COLUMNS"]


def heatmap_frame(hists: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[pd.DataFrame, np.ndarray]:
    """{step: (edges, counts)} → (counts frame: index step, one column per bin; the shared edges). Steps whose
    edges differ from the first step's (a changed trust region) are left out: bins must align."""
    if not hists:
        return pd.DataFrame(), np.array([])
    steps = sorted(hists)
    edges = np.asarray(hists[steps[0]][0], float)
    rows = {s: np.asarray(c) for s, (e, c) in ((s, hists[s]) for s in steps) if np.array_equal(np.asarray(e), edges)}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "step"
    return frame, edges


def log_ratio_heatmap(counts: pd.DataFrame, edges: np.ndarray, bounds: tuple[float | None, float | None] | None,
                      title: str) -> go.Figure:
    """Heatmap of the log-ratio distribution: x = step, y = log(ratio) bins (uneven: finest near the trust
    region), colour = log10 of the fraction of the step's tokens in the bin (empty bins blank). `bounds` are the
    trust region in ratio space (1−ε_low, 1+ε_high); its finite edges are drawn as lines (a one-sided region,
    e.g. CISPO's with no lower bound, has None on the open side and one line)."""
    if counts.empty or counts.to_numpy().sum() == 0:
        return empty_figure(title, "no data: no log-ratio histograms in this step range")
    c = counts.to_numpy(dtype=float)
    frac = c / np.maximum(c.sum(axis=1, keepdims=True), 1.0)
    with np.errstate(divide="ignore"):
        z = np.where(frac > 0, np.log10(frac), np.nan).T  # (bins, steps)
    used = np.flatnonzero(c.sum(axis=0) > 0)
    y_lo, y_hi = edges[used[0]], edges[used[-1] + 1]
    lines = [] if bounds is None else [(np.log(b), f"1{sign}ε = {b:g}") for b, sign in zip(bounds, "−+")
                                       if b is not None and 0 < b < np.inf]
    for value, _ in lines:  # keep the trust region in view even when every token lies inside it
        y_lo, y_hi = min(y_lo, value * 1.5), max(y_hi, value * 1.5)
    fig = go.Figure(go.Heatmap(
        x=counts.index.to_numpy(), y=edges, z=z, colorscale="Viridis", zmin=max(np.nanmin(z), -6), zmax=0,
        colorbar=dict(title="log10 frac"),
        hovertemplate="step %{x}<br>log r %{y:.3f}<br>log10 frac %{z:.2f}<extra></extra>",
    ))
    for value, label in lines:
        fig.add_hline(y=value, line=dict(color="#ff2b2b", dash="dash", width=2), annotation_text=label,
                      annotation_position="top left", annotation_font_color="#ef553b")
    fig.update_layout(title=title, xaxis_title="training step", yaxis_title="log(ratio) of the branch", height=360,
                      yaxis_range=[y_lo, y_hi], margin=dict(t=50, b=40, l=60, r=10))
    return fig


def outlier_table(outliers: pd.DataFrame, branches: Sequence[str] | None = None, top: int = 20) -> pd.DataFrame:
    """The top outlier tokens per branch, farthest outside the trust region first, with their context:
    `context` shows the token between ⟦ ⟧ inside its neighbours."""
    cols = ["branch", "side", "distance", "ratio", "binding", "context", "entropy", "w", "advantage",
            "response_id", "position", "epoch"]
    if outliers.empty:
        return pd.DataFrame(columns=cols)
    df = outliers if branches is None else outliers[outliers["branch"].isin(branches)]
    df = df.sort_values(["branch", "distance"], ascending=[True, False], kind="stable").groupby("branch").head(top)
    out = df.assign(
        ratio=np.exp(df["log_ratio"].astype(float)),
        context=(df["context_left"].fillna("") + "⟦" + df["token_text"].fillna("") + "⟧"
                 + df["context_right"].fillna("")),
    )
    return out[cols].reset_index(drop=True)


def carries_gradient(table: pd.DataFrame) -> pd.Series:
    """Rows of an outlier table whose token the update acts on: a non-zero advantage (a token of a group whose
    responses all got the same reward has advantage 0 and no gradient), or a binding clip."""
    return (table["advantage"].fillna(0) != 0) | table["binding"].fillna(False).astype(bool)


SUMMARY_COLUMNS = ("branch", "log_ratio", "binding", "token_text", "advantage")
"""The outlier columns binding_summary reads (the page reads only these of its 40 steps' files)."""


def binding_summary(outliers: pd.DataFrame, top: int = 15) -> pd.DataFrame:
    """Run-level: the binding outlier tokens grouped by text, most frequent first — count, share of all binding
    outliers, the branches they bind in, mean ratio, mean advantage (reads SUMMARY_COLUMNS)."""
    cols = ["token", "count", "share of binding outliers", "branches", "mean ratio", "mean advantage"]
    if outliers.empty or "binding" not in outliers.columns:
        return pd.DataFrame(columns=cols)
    b = outliers[outliers["binding"].fillna(False).astype(bool)]
    if b.empty:
        return pd.DataFrame(columns=cols)
    b = b.assign(token=b["token_text"].fillna("�").map(repr), ratio=np.exp(b["log_ratio"].astype(float)))
    out = b.groupby("token", sort=False).agg(
        count=("ratio", "size"), branches=("branch", lambda s: ", ".join(sorted(set(s)))),
        **{"mean ratio": ("ratio", "mean"), "mean advantage": ("advantage", "mean")}).reset_index()
    out["share of binding outliers"] = out["count"] / len(b)
    return out.sort_values(["count", "token"], ascending=[False, True], kind="stable").head(top)[cols] \
        .reset_index(drop=True)
