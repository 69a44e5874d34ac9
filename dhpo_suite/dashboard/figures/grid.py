"""Several standalone figures drawn as one figure of subplots (pure).

Why: the browser's cost of a page is per figure, not per point (benchmarks/dashboard_draw.py: the Dynamics
page's 7 panels as one figure draw in 0.55× the time of 7 figures). Each panel keeps what it had on its own:
its title, axis titles and formats, its linear/log switch (now acting on its own y axis) and its "no data" note.
"""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = ["grid", "GAP_PX"]

GAP_PX = 120
"""Pixels between two rows of panels: the upper panel's x-axis title and the lower one's title and switch."""


def grid(figs: Sequence[go.Figure], cols: int = 2, panel_height: int = 320) -> go.Figure:
    """`figs` as one figure, row by row, `cols` panels a row (each `panel_height` px tall)."""
    rows = -(-len(figs) // cols)
    height = rows * panel_height
    out = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.09,
                        vertical_spacing=GAP_PX / height if rows > 1 else 0.0,
                        subplot_titles=[f.layout.title.text or "" for f in figs])
    for i, title in enumerate(out.layout.annotations):  # left-aligned: the linear/log switch is at the right
        title.update(x=out.layout["xaxis" + ("" if i == 0 else str(i + 1))].domain[0], xanchor="left", font_size=14)
    cells = [divmod(i, cols) for i in range(len(figs))]
    out.add_traces([t for f in figs for t in f.data],  # one call: adding one by one re-validates each time
                   rows=[r + 1 for f, (r, _) in zip(figs, cells) for _ in f.data],
                   cols=[c + 1 for f, (_, c) in zip(figs, cells) for _ in f.data])
    for i, f in enumerate(figs):
        n = "" if i == 0 else str(i + 1)  # make_subplots numbers the axes row by row: x, x2, x3, ...
        for axis in ("xaxis", "yaxis"):
            props = {k: v for k, v in f.layout[axis].to_plotly_json().items() if k not in ("domain", "anchor")}
            out.layout[axis + n].update(props)
        for note in f.layout.annotations:  # "no data: ..." in the panel's own area
            out.add_annotation(note.update(xref=f"x{n} domain", yref=f"y{n} domain"))
        top, right = out.layout["yaxis" + n].domain[1], out.layout["xaxis" + n].domain[1]
        for menu in f.layout.updatemenus:  # the panel's linear/log switch, on its own y axis, at its top right
            for button in menu.buttons:
                button.args = [{k.replace("yaxis.", f"yaxis{n}."): v for k, v in button.args[0].items()}]
            out.layout.updatemenus += (menu.update(x=right, y=top + 4 / height),)
    first = figs[0].layout
    out.update_layout(height=height + 100, margin=dict(t=60, b=40, l=60, r=10), showlegend=first.showlegend,
                      hovermode=first.hovermode, hoverlabel=first.hoverlabel)
    return out
