"""`python -m dhpo_suite.dashboard.serve <streamlit run args>`: Streamlit's CLI with the app's modules preloaded.

Streamlit runs the app's scripts inside the server process, so importing pandas, pyarrow, Plotly and the
dashboard here (and drawing one throw-away figure, which builds Plotly's validators) moves ~1-2 s of first-use
cost from the first page view to server start. The Sweep page's statistics (dhpo_suite.science.compare) import
scipy.stats: ~0.6 s of CPU that the first visit of that page paid before.

Streamlit then runs a full garbage collection after every script run, fragments' included (runner.postScriptGC,
against memory build-up): it traversed the ~170k objects of these imports each time, ~0.11 s of CPU holding the
GIL, about half the server's time of a page switch. They live as long as the server, so they are frozen
(`gc.freeze`) once imported: the collection after a run then only visits what runs created.
"""

from __future__ import annotations

import gc
import sys


def preload() -> None:
    import plotly.graph_objects as go

    import dhpo_suite.dashboard.figures.collapse  # noqa: F401
    import dhpo_suite.dashboard.figures.evaluation  # noqa: F401
    import dhpo_suite.dashboard.figures.outliers  # noqa: F401
    import dhpo_suite.dashboard.frames  # noqa: F401
    import dhpo_suite.dashboard.prefetch  # noqa: F401  (and views, the pages' cached builds)
    import dhpo_suite.dashboard.sweep_stats  # noqa: F401  (scipy.stats, through science.compare)

    import numpy as np
    import pandas as pd

    # pandas and numpy data, as the pages pass: Plotly's validators read them through narwhals, whose pandas
    # modules load on first use (~0.08 s of the first chart page otherwise)
    go.Figure(go.Scatter(x=pd.Series([0, 1]), y=np.array([0.0, 1.0]))).add_trace(go.Heatmap(z=[[0.0]])).to_json()


def prepare() -> None:
    """Preload, then freeze everything imported so far (Streamlit's server included)."""
    preload()
    import streamlit.web.cli  # noqa: F401

    gc.collect()
    gc.freeze()  # never garbage, no longer traversed by each run's collection


def main() -> None:
    prepare()
    from streamlit.web.cli import main as streamlit_main

    sys.argv = ["streamlit", *sys.argv[1:]]
    streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    main()
