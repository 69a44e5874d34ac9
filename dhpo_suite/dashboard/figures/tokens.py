"""Rollout viewer: a sampled response as HTML, each token coloured by a per-token quantity (pure).

Quantities (columns of a samples row, see dhpo_suite.runs.records.SAMPLE_SCHEMA):
- ratios (token_ratio, seq_ratio, mixed_ratio): diverging in log space around r = 1 — blue below, red above,
  full colour at the trust-region edge (or |log r| = 0.5 without one); tokens outside the region get a border;
- entropy: white → purple, full colour at the response's largest entropy;
- w (DHPO mixing weight): white → green on [0, 1].
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np

__all__ = ["COLOR_BY", "token_colors", "rollout_html"]

COLOR_BY = {
    "token ratio": "token_ratio",
    "sequence ratio": "seq_ratio",
    "mixed ratio": "mixed_ratio",
    "entropy": "entropy",
    "w": "w",
}
"""Widget label → samples column."""

_RATIO_COLS = ("token_ratio", "seq_ratio", "mixed_ratio")


def _mix(rgb: tuple[int, int, int], t: float) -> str:
    """Blend white → rgb by t in [0, 1] (NaN: light grey, the value was not recorded)."""
    if not math.isfinite(t):
        return "#eeeeee"
    t = min(max(t, 0.0), 1.0)
    r, g, b = (round(255 + (c - 255) * t) for c in rgb)
    return f"#{r:02x}{g:02x}{b:02x}"


def token_colors(values: Sequence[float], column: str,
                 bounds: tuple[float | None, float | None] | None = None) -> list[str]:
    """Background colour per token for `column` (see the module docstring for the scales). A ratio reaches
    full colour at the trust-region edge; an open side (None) uses the other edge mirrored."""
    v = np.asarray(values, dtype=float)
    if column in _RATIO_COLS:
        with np.errstate(divide="ignore", invalid="ignore"):
            lr = np.log(v)
        lo, hi = bounds or (None, None)
        edge_lo = math.log(lo) if lo else None
        edge_hi = math.log(hi) if hi and math.isfinite(hi) else None
        if not edge_lo and not edge_hi:  # no usable edge: a fixed scale
            edge_lo, edge_hi = -0.5, 0.5
        edge_lo = edge_lo or -edge_hi  # an open side mirrors the other
        edge_hi = edge_hi or -edge_lo
        return [_mix((33, 102, 172), x / edge_lo) if x < 0 else _mix((178, 24, 43), x / edge_hi) for x in lr]
    if column == "entropy":
        top = np.nanmax(v) if np.isfinite(v).any() and np.nanmax(v) > 0 else 1.0
        return [_mix((118, 42, 131), x / top) for x in v]
    if column == "w":
        return [_mix((27, 120, 55), x) for x in v]
    raise ValueError(f"cannot colour by {column!r}; expected one of {sorted(COLOR_BY.values())}")


def rollout_html(tokens: Sequence[str], values: Sequence[float], column: str,
                 bounds: tuple[float, float] | None = None, outside: Sequence[bool] | None = None) -> str:
    """The response as a <div> of <span>s: background from token_colors, a hover title with the value,
    a border on tokens flagged `outside` the trust region. Text is HTML-escaped; newlines are kept."""
    colors = token_colors(values, column, bounds)
    outside = outside if outside is not None else [False] * len(tokens)
    spans = []
    for i, (tok, val, col, out) in enumerate(zip(tokens, values, colors, outside)):
        text = html.escape(tok if tok is not None else "�").replace("\n", "↵<br>")
        border = "box-shadow:inset 0 0 0 1.5px #000;" if out else ""
        title = html.escape(f"#{i} {tok!r} {column}={val:.4g}" if val is not None else f"#{i} {tok!r}")
        spans.append(f'<span class="tok" title="{title}" style="background:{col};{border}">{text}</span>')
    return ('<div class="rollout" style="font-family:monospace;font-size:1.05rem;white-space:pre-wrap;line-height:1.8">'
            + "".join(spans) + "</div>")
