"""Several standalone figures drawn as one figure of subplots (pure).

Why: the browser's cost of a page is per figure, not per point (benchmarks/dashboard_draw.py: the Dynamics
page's 7 panels as one figure draw in 0.55× the time of 7 figures). Each panel keeps what it had on its own:
its title, axis titles and formats, its linear/log switch (now acting on its own y axis) and its "no data" note.
"""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

__all__ = ["grid", "GAP_PX", "axis_suffix"]

GAP_PX = 120
"""Pixels between two rows of panels: the upper panel's x-axis title and the lower one's title and switch."""


def axis_suffix(i: int) -> str:
    """The suffix of subplot i's (0-based) axes in a make_subplots figure, numbered row by row: x, x2, x3, ..."""
    return "" if i == 0 else str(i + 1)


def grid(figs: Sequence[go.Figure | dict], cols: int = 2, panel_height: int = 320) -> go.Figure:
    """`figs` (figures, or plain dicts as curves.overlay makes them) as one figure, row by row, `cols` panels a
    row (each `panel_height` px tall). Assembled as plain dicts and validated once by go.Figure (editing the
    figure object property by property cost ~0.1 s; validating each panel first, ~0.05 s more)."""
    # a trace's own JSON keeps numpy arrays (a figure's is base64)
    parts = [f if isinstance(f, dict) else {"data": [t.to_plotly_json() for t in f.data],
                                            "layout": f.layout.to_plotly_json()} for f in figs]
    rows = -(-len(parts) // cols)
    height = rows * panel_height
    layout = make_subplots(rows=rows, cols=cols, horizontal_spacing=0.09,
                           vertical_spacing=GAP_PX / height if rows > 1 else 0.0,
                           subplot_titles=[(p["layout"].get("title") or {}).get("text") or "" for p in parts]
                           ).layout.to_plotly_json()
    titles, data, menus = layout["annotations"], [], []
    for i, f in enumerate(parts):
        n = axis_suffix(i)
        x, y = layout["xaxis" + n], layout["yaxis" + n]
        titles[i].update(x=x["domain"][0], xanchor="left", font=dict(size=14))  # the switch is at the right
        data += [t | dict(xaxis="x" + n, yaxis="y" + n) for t in f["data"]]
        for axis in (x, y):
            axis.update({k: v for k, v in f["layout"].get("xaxis" if axis is x else "yaxis", {}).items()
                         if k not in ("domain", "anchor")})
        # "no data: ..." in the panel's own area
        titles += [a | dict(xref=f"x{n} domain", yref=f"y{n} domain") for a in f["layout"].get("annotations", [])]
        for menu in f["layout"].get("updatemenus", []):  # the panel's linear/log switch, on its own y axis
            buttons = [b | dict(args=[{k.replace("yaxis.", f"yaxis{n}."): v for k, v in b["args"][0].items()}])
                       for b in menu["buttons"]]
            menus.append(menu | dict(buttons=buttons, x=x["domain"][1], y=y["domain"][1] + 4 / height))
    first = parts[0]["layout"]
    layout.update(updatemenus=menus, height=height + 100, margin=dict(t=60, b=40, l=60, r=10),
                  showlegend=first.get("showlegend"), hovermode=first.get("hovermode"),
                  hoverlabel=first.get("hoverlabel"))
    return go.Figure(data=data, layout=layout)
