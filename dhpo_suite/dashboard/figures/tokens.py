"""Rollout viewer: a sampled response as HTML, each token coloured by a per-token quantity (pure).

Quantities (columns of a samples row, see dhpo_suite.runs.records.SAMPLE_SCHEMA):
- ratios (token_ratio, seq_ratio, mixed_ratio): diverging in log space around r = 1 — blue below, red above,
  full colour at the trust-region edge (or |log r| = 0.5 without one); tokens outside the region get a border;
- entropy: white → purple, full colour at `entropy_max` (the page passes the step's largest entropy, so
  every response of a step shares one scale and one legend);
- w (DHPO mixing weight): white → green on [0, 1].
Text is black on light cells and white on dark ones (WCAG relative luminance), so every token stays readable.
`color_legend_html` draws the scale in use, with the same colour function.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np

__all__ = ["COLOR_BY", "token_colors", "rollout_html", "text_color", "color_legend_html", "CAPTIONS"]

COLOR_BY = {
    "token ratio": "token_ratio",
    "sequence ratio": "seq_ratio",
    "mixed ratio": "mixed_ratio",
    "entropy": "entropy",
    "w": "w",
}
"""Widget label → samples column."""

_RATIO_COLS = ("token_ratio", "seq_ratio", "mixed_ratio")

CAPTIONS = {
    "ratio": "Blue: ratio below 1 (the token became less likely), red: above 1; full colour at the trust-region "
             "edge; a black box marks tokens outside the region.",
    "entropy": "White → purple: the policy's entropy at the token (nats); full colour at the step's largest "
               "entropy.",
    "w": "White → green: DHPO's mixing weight w (0: sequence ratio only, 1: token ratio only).",
}
"""What the colours mean, per kind of quantity (shown under the viewer for the chosen colouring only)."""


def _mix(rgb: tuple[int, int, int], t: float) -> str:
    """Blend white → rgb by t in [0, 1] (NaN: light grey, the value was not recorded)."""
    if not math.isfinite(t):
        return "#eeeeee"
    t = min(max(t, 0.0), 1.0)
    r, g, b = (round(255 + (c - 255) * t) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def text_color(background: str) -> str:
    """Black or white, whichever contrasts more with `background` ('#rrggbb'; WCAG relative luminance)."""
    h = background.lstrip("#")
    lin = [(c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4) for c in (int(h[i:i + 2], 16) / 255
                                                                                   for i in (0, 2, 4))]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return "#000000" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "#ffffff"


def _ratio_edges(bounds) -> tuple[float, float]:
    lo, hi = bounds or (None, None)
    edge_lo = math.log(lo) if lo else None
    edge_hi = math.log(hi) if hi and math.isfinite(hi) else None
    if not edge_lo and not edge_hi:  # no usable edge: a fixed scale
        edge_lo, edge_hi = -0.5, 0.5
    edge_lo = edge_lo or -edge_hi  # an open side mirrors the other
    return edge_lo, edge_hi or -edge_lo


def token_colors(values: Sequence[float], column: str,
                 bounds: tuple[float | None, float | None] | None = None,
                 entropy_max: float | None = None) -> list[str]:
    """Background colour per token for `column` (scales: the module docstring; an open side of the region,
    None, mirrors the other edge)."""
    v = np.asarray(values, dtype=float)
    if column in _RATIO_COLS:
        with np.errstate(divide="ignore", invalid="ignore"):
            lr = np.log(v)
        edge_lo, edge_hi = _ratio_edges(bounds)
        return [_mix((33, 102, 172), x / edge_lo) if x < 0 else _mix((178, 24, 43), x / edge_hi) for x in lr]
    if column == "entropy":
        top = entropy_max if entropy_max else (np.nanmax(v) if np.isfinite(v).any() and np.nanmax(v) > 0 else 1.0)
        return [_mix((118, 42, 131), x / top) for x in v]
    if column == "w":
        return [_mix((27, 120, 55), x) for x in v]
    raise ValueError(f"cannot colour by {column!r}; expected one of {sorted(COLOR_BY.values())}")


def color_legend_html(column: str, bounds: tuple[float | None, float | None] | None = None,
                      entropy_max: float | None = None) -> str:
    """The colour scale of `column` as a bar of swatches labelled with values, drawn by token_colors itself
    (so the legend cannot drift from the colouring)."""
    if column in _RATIO_COLS:
        lo, hi = _ratio_edges(bounds)
        values = [math.exp(x) for x in (lo, lo / 2, 0.0, hi / 2, hi)]
        labels = [f"{v:.4g}" for v in values]
        labels[0], labels[-1] = f"≤ {labels[0]}", f"≥ {labels[-1]}"
    elif column == "entropy":
        top = entropy_max or 1.0
        values = [0.0, top / 4, top / 2, 3 * top / 4, top]
        labels = [f"{v:.3g} nats" for v in values]
    else:
        values = [0.0, 0.25, 0.5, 0.75, 1.0]
        labels = [f"w = {v:g}" for v in values]
    colors = token_colors(values, column, bounds, entropy_max)
    cells = "".join(f'<span class="swatch" style="background:{c};color:{text_color(c)};padding:0.1em 0.8em;'
                    f'border:1px solid #ccc">{html.escape(t)}</span>' for c, t in zip(colors, labels))
    box = ' <span style="box-shadow:inset 0 0 0 1.5px #000;padding:0.1em 0.5em">outside the region</span>' \
        if column in _RATIO_COLS else ""
    return f'<div class="color-legend" style="font-size:0.85rem">{cells}{box}</div>'


def rollout_html(tokens: Sequence[str], values: Sequence[float], column: str,
                 bounds: tuple[float, float] | None = None, outside: Sequence[bool] | None = None,
                 entropy_max: float | None = None, mark: int | None = None) -> str:
    """The response as a <div> of <span>s: background from token_colors, text black or white for contrast,
    a hover title with the value, a border on tokens flagged `outside` the trust region, and an underline on
    token `mark` (an outlier opened from the table). Text is HTML-escaped; newlines are kept."""
    colors = token_colors(values, column, bounds, entropy_max)
    outside = outside if outside is not None else [False] * len(tokens)
    spans = []
    for i, (tok, val, col, out) in enumerate(zip(tokens, values, colors, outside)):
        text = html.escape(tok if tok is not None else "�").replace("\n", "↵<br>")
        border = "box-shadow:inset 0 0 0 1.5px #000;" if out else ""
        if i == mark:
            border += "outline:3px solid #ff8c00;"
        title = html.escape(f"#{i} {tok!r} {column}={val:.4g}" if val is not None else f"#{i} {tok!r}")
        spans.append(f'<span class="tok" title="{title}" style="background:{col};color:{text_color(col)};{border}">'
                     f'{text}</span>')
    return ('<div class="rollout" style="font-family:monospace;font-size:1.05rem;white-space:pre-wrap;line-height:1.8">'
            + "".join(spans) + "</div>")
