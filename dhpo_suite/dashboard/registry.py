"""The dashboard's pages, in navigation order. app.py builds st.navigation from this; tests iterate it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["PageSpec", "PAGES", "PAGE_DIR", "QUESTIONS", "RUNS_DIR_ENV"]

PAGE_DIR = Path(__file__).with_name("app_pages")
RUNS_DIR_ENV = "DHPO_RUNS_DIR"
"""The environment variable through which `dhpo-suite dashboard` tells the app its runs directory."""


@dataclass(frozen=True)
class PageSpec:
    """One page: its script under app_pages/, its title and icon, and what it is for (shown in docs and tests)."""

    file: str
    title: str
    icon: str
    about: str


PAGES: tuple[PageSpec, ...] = (
    PageSpec("runs.py", "Runs", ":material/table_rows:",
             "runs in the directory with manifest facts; pick runs to compare"),
    PageSpec("dynamics.py", "Dynamics", ":material/show_chart:", "any logged metric overlaid across runs, log scale"),
    PageSpec("collapse.py", "Entropy collapse", ":material/trending_down:",
             "collapse verdict; entropy, length, clip, KL, groups on one axis; a clicked step's tokens"),
    PageSpec("outliers.py", "Clipping and outliers", ":material/scatter_plot:",
             "clip per branch, log-ratio heatmaps, tokens that bind most, outlier responses"),
    PageSpec("rollouts.py", "Responses", ":material/article:",
             "a step's responses with prompt and gold answer, tokens coloured"),
    PageSpec("evaluation.py", "Evaluation", ":material/school:",
             "Table-1 pivot, accuracy vs step, per-problem drill-down"),
    PageSpec("sweep.py", "Sweep", ":material/stacked_line_chart:",
             "algorithms across seeds: means with 95 % intervals, paired differences, curves with bands"),
)

QUESTIONS: tuple[tuple[str, str], ...] = (
    ("Did it collapse, when, why?", "collapse.py"),
    ("Which branch's clip binds, on which tokens?", "outliers.py"),
    ("How do the runs compare?", "dynamics.py"),
    ("What did the model write at step N?", "rollouts.py"),
)
"""The researcher's questions, each linked from the Runs page to the page that answers it."""
