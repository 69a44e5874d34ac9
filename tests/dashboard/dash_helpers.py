"""AppTest helpers: open a page of the app over a runs directory and read its Plotly figures' data."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
from streamlit.testing.v1 import AppTest

import dhpo_suite.dashboard
from dhpo_suite.dashboard.controls import RUNS_DIR_ENV
from dhpo_suite.dashboard.registry import PAGES

APP = Path(dhpo_suite.dashboard.__file__).with_name("app.py")


def open_page(monkeypatch, root: Path, page: str | None = None, timeout: float = 60) -> AppTest:
    """Run the app over `root` and switch to app_pages/<page> (None: the first page)."""
    monkeypatch.setenv(RUNS_DIR_ENV, str(root))
    at = AppTest.from_file(str(APP), default_timeout=timeout).run()
    if page is not None and page != PAGES[0].file:
        at.switch_page(f"app_pages/{page}").run()
    return at


def decode(v):
    """Plotly JSON arrays: plain lists or typed arrays {"dtype", "bdata"(base64), "shape"}."""
    if isinstance(v, dict) and "bdata" in v:
        a = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return a.reshape([int(x) for x in str(v["shape"]).split(",")]) if "shape" in v else a
    return np.asarray(v) if isinstance(v, list) else v


def figures(at: AppTest) -> list[dict]:
    """Every Plotly chart on the page as {"title", "data": [trace dicts with decoded arrays], "layout"}."""
    out = []
    for el in at.get("plotly_chart"):
        spec = json.loads(el.proto.spec)
        data = [{k: decode(v) for k, v in t.items()} for t in spec["data"]]
        title = spec["layout"].get("title", {}).get("text", "")
        out.append({"title": title, "data": data, "layout": spec["layout"]})
    return out


def panels(fig: dict) -> list[dict]:
    """The panels of a figure of subplots (figures.grid) as figures of their own, in the shape `figures` returns:
    the panel's title (its subplot title), its traces, and its axes and linear/log switch under the names a
    standalone figure gives them ("xaxis", "yaxis", "updatemenus")."""
    n_axes = sum(k.startswith("yaxis") for k in fig["layout"])  # one y axis per panel (figures.grid)
    out = []
    for i, note in enumerate(fig["layout"].get("annotations", [])[:n_axes]):
        n = "" if i == 0 else str(i + 1)
        yaxis = fig["layout"][f"yaxis{n}"]
        layout = {k: v for k, v in fig["layout"].items() if not k.startswith(("xaxis", "yaxis", "updatemenus"))}
        layout |= {"xaxis": fig["layout"]["xaxis" + yaxis.get("anchor", "x")[1:]], "yaxis": yaxis,
                   "updatemenus": [m for m in fig["layout"].get("updatemenus", [])
                                   if f"yaxis{n}.type" in m["buttons"][0]["args"][0]]}
        out.append({"title": note["text"], "layout": layout,
                    "data": [t for t in fig["data"] if t.get("yaxis", "y") == f"y{n}"]})
    return out


def figure(at: AppTest, title_start: str) -> dict:
    """The figure whose title starts with `title_start`, else the panel (subplot) whose title does."""
    every = figures(at) + [p for f in figures(at) for p in panels(f)]
    found = [f for f in every if f["title"].startswith(title_start)]
    assert found, f"no figure or panel titled {title_start!r}; have {[f['title'] for f in every]}"
    return found[0]


def trace(fig: dict, name: str) -> dict:
    found = [t for t in fig["data"] if t.get("name") == name]
    assert found, f"no trace {name!r} in {fig['title']!r}; have {[t.get('name') for t in fig['data']]}"
    return found[0]


def no_errors(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def texts(at: AppTest) -> str:
    """All warning/info/caption/code/markdown text of the page, for 'says what is missing' checks."""
    parts = [e.value for kind in ("warning", "info", "caption", "code", "markdown", "error") for e in at.get(kind)]
    parts += [e.label for e in at.get("expander")]
    return "\n".join(str(p) for p in parts)
