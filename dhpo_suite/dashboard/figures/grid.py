"""Several standalone figures drawn as one figure of subplots (pure).

Why one figure: the browser's cost of a page is per figure, not per point (benchmarks/dashboard_draw.py: the
Dynamics page's 7 panels as one figure draw in 0.55× the time of 7 figures). Each panel keeps what it had on its
own: its title, y-axis title and format, its linear/log switch (acting on its own y axis) and its "no data" note.

Linked like TensorBoard's and W&B's panels: the panels of a column that share the x quantity (training step,
tokens, wall time) are stacked on ONE x axis, so Plotly's `hoversubplots="axis"` draws one hover line through all
of them and lists every panel's runs at that x; the columns' x axes are `matches`-linked, so a zoom or pan of any
panel moves all of them. A panel on another x quantity keeps an axis of its own. A panel without data draws its
note in paper coordinates inside its own area: referencing its axes, which Plotly never creates for a panel
without traces, put the note on the first axis and stretched the first panel's range (issue 43).
"""

from __future__ import annotations

from typing import Sequence

import plotly.graph_objects as go

__all__ = ["grid", "PANEL_PX", "TITLE_PX", "axis_suffix"]

PANEL_PX = 250
"""Pixels of one row of panels: its title and switch, its plot area and the gap below it."""
TITLE_PX = 46
"""Of those, the pixels above the plot area: the panel's title and its linear/log switch."""
BELOW_PX = 40
"""And below it: the x axis's ticks and title, where the column's x axis is drawn."""
_HSPACE = 0.075  # between columns (paper fraction): the y-axis title and ticks of the panel on the right


def axis_suffix(i: int) -> str:
    """The suffix of axis i (0-based) of a figure of subplots: x, x2, x3, ..."""
    return "" if i == 0 else str(i + 1)


def _parts(figs: Sequence[go.Figure | dict]) -> list[dict]:
    # a trace's own JSON keeps numpy arrays (a figure's is base64)
    return [f if isinstance(f, dict) else {"data": [t.to_plotly_json() for t in f.data],
                                           "layout": f.layout.to_plotly_json()} for f in figs]


def _x_title(part: dict) -> str | None:
    return ((part["layout"].get("xaxis") or {}).get("title") or {}).get("text")


def grid(figs: Sequence[go.Figure | dict], cols: int = 3, panel_height: int = PANEL_PX) -> go.Figure:
    """`figs` (figures, or plain dicts as curves.overlay makes them) as one figure, row by row, `cols` panels a
    row, each row `panel_height` px. Panel i has y axis i+1 (`yaxis{i+1}`, anchored to its x axis) and title
    annotation i. Assembled as plain dicts and validated once by go.Figure (editing the figure object property
    by property cost ~0.1 s)."""
    parts = _parts(figs)
    rows = -(-len(parts) // cols)
    height = rows * panel_height
    width = (1 - _HSPACE * (cols - 1)) / cols
    shared = next((_x_title(p) for p in parts if p["data"]), None)  # the x quantity of the linked axes
    layout: dict = {}
    data, menus, titles, notes = [], [], [], []
    lowest: dict[int, int] = {}  # column -> its lowest panel drawn on the column's x axis
    own = cols  # axes of panels on another x quantity are numbered after the columns'
    for i, part in enumerate(parts):
        row, col = divmod(i, cols)
        xdom = [col * (width + _HSPACE), col * (width + _HSPACE) + width]
        top = 1 - row * panel_height / height
        ydom = [max(0.0, top - (panel_height - BELOW_PX) / height), top - TITLE_PX / height]
        if part["data"] and _x_title(part) != shared:
            x = "x" + axis_suffix(own)
            own += 1
            layout["xaxis" + x[1:]] = {**(part["layout"].get("xaxis") or {}), "domain": xdom, "anchor": f"y{i + 1}"}
        else:
            x = "x" + axis_suffix(col)
            if part["data"]:
                lowest[col] = i
        y = "y" + axis_suffix(i)
        yaxis = {k: v for k, v in (part["layout"].get("yaxis") or {}).items() if k not in ("domain", "anchor")}
        layout["yaxis" + y[1:]] = {**yaxis, "domain": ydom, "anchor": x}
        data += [t | dict(xaxis=x, yaxis=y) for t in part["data"]]
        text = (part["layout"].get("title") or {}).get("text") or ""
        titles.append(dict(text=text, x=xdom[0], y=ydom[1] + 6 / height, xref="paper", yref="paper",
                           xanchor="left", yanchor="bottom", showarrow=False, font=dict(size=13)))
        if not part["data"]:  # "no data: ..." in the panel's own area, never on another panel's axes
            layout["yaxis" + y[1:]]["visible"] = False
            notes += [a | dict(xref="paper", yref="paper", x=sum(xdom) / 2, y=sum(ydom) / 2, font=dict(size=11),
                               text=str(a.get("text", "")).replace(": ", ":<br>", 1))  # within a third of the page
                      for a in part["layout"].get("annotations", [])]
        for menu in part["layout"].get("updatemenus", []):  # the panel's linear/log switch, on its own y axis
            buttons = [b | dict(args=[{k.replace("yaxis.", f"yaxis{y[1:]}."): v for k, v in b["args"][0].items()}])
                       for b in menu["buttons"]]
            menus.append(menu | dict(buttons=buttons, x=xdom[1], y=ydom[1] + 2 / height))
    for col in range(min(cols, len(parts))):
        first = next((p for p in parts if p["data"] and _x_title(p) == shared), {"layout": {}})
        below = lowest.get(col)
        xaxis = first["layout"].get("xaxis") or {}
        layout["xaxis" + axis_suffix(col)] = {
            **xaxis, "title": {**(xaxis.get("title") or {}), "standoff": 4, "font": dict(size=12)},
            "domain": [col * (width + _HSPACE), col * (width + _HSPACE) + width],
            "anchor": f"y{axis_suffix(below if below is not None else col)}", "visible": below is not None,
            **({"matches": "x"} if col else {})}
    head = parts[0]["layout"] if parts else {}
    layout.update(annotations=titles + notes, updatemenus=menus, height=height + 40,
                  margin=dict(t=10, b=30, l=60, r=10), showlegend=head.get("showlegend"),
                  hovermode=head.get("hovermode", "x unified"), hoversubplots="axis",
                  hoverlabel=head.get("hoverlabel"))
    return go.Figure(data=data, layout=layout)
