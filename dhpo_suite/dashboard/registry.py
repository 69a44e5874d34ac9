"""The dashboard's pages, in navigation order. app.py builds st.navigation from this; tests iterate it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["PageSpec", "PAGES", "PAGE_DIR"]

PAGE_DIR = Path(__file__).with_name("pages")


@dataclass(frozen=True)
class PageSpec:
    """One page: its script under pages/, its title and icon, and what it is for (shown in docs and tests)."""

    file: str
    title: str
    icon: str
    about: str


PAGES: tuple[PageSpec, ...] = (
    PageSpec("runs.py", "Runs", ":material/table_rows:", "runs in the directory with manifest facts; pick runs to compare"),
    PageSpec("dynamics.py", "Dynamics", ":material/show_chart:", "training curves overlaid across runs"),
    PageSpec("collapse.py", "Entropy collapse", ":material/trending_down:", "collapse detector, group outcomes, entropy percentiles"),
    PageSpec("outliers.py", "Branch outliers", ":material/scatter_plot:", "log-ratio heatmaps, top outlier tokens, rollout viewer"),
    PageSpec("evaluation.py", "Evaluation", ":material/school:", "Table-1 pivot, accuracy vs step, per-problem drill-down"),
)
