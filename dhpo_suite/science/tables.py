"""Rich tables of compare's intervals (terminal), and the same rows as plain strings (Markdown report)."""

from __future__ import annotations

import math
import re

import pandas as pd
from rich.table import Table

from dhpo_suite.science.compare import METRIC_DOCS, Interval

__all__ = ["CONTRAST_HEADER", "contrast_rows", "fmt_interval", "interval_table", "markdown_table", "rich_table",
           "runs_note"]

_HEADERS = {"final_reward": ("final reward", 3), "reward_auc": ("reward AUC", 3), "late_entropy": ("late entropy", 3),
            "late_length": ("late length", 1), "collapse_step": ("collapse step", 1),
            "residual_sd": ("residual sd", 3), "mean_kl": ("mean KL", 4), "grad_norm_sd": ("grad-norm sd", 3)}
"""Per metric: its column header and the digits its values are shown with."""
CONTRAST_HEADER = ["contrast", "arm − baseline", "metric", "claim", "seeds", "mean [95 % t-CI]", "t p", "Holm p",
                   "sign-flip p", "TOST p", "P(impr.)", "verdict"]


def fmt_interval(iv: Interval, digits: int = 3) -> str:
    """`0.412 [0.380, 0.451]`; the mean alone when there is no interval; `—` when there is no value."""
    if not isinstance(iv, Interval) or math.isnan(iv.mean):
        return "—"
    if math.isnan(iv.lo):
        return f"{iv.mean:.{digits}f}"
    return f"{iv.mean:.{digits}f} [{iv.lo:.{digits}f}, {iv.hi:.{digits}f}]"


def _rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    extra = [c for c in ("n", "collapsed", "seeds") if c in frame]
    header = ["label", *extra, *(_HEADERS[m][0] for m in METRIC_DOCS)]
    rows = [[str(r["label"]), *(",".join(map(str, r[c])) if c == "seeds" else str(r[c]) for c in extra),
             *(fmt_interval(r[m], _HEADERS[m][1]) for m in METRIC_DOCS)] for _, r in frame.iterrows()]
    return header, rows


def interval_table(frame: pd.DataFrame, title: str):
    """A rich Table of summarize() or paired_differences() output, with the metric definitions as caption."""
    return rich_table(title, "; ".join(f"{_HEADERS[k][0]}: {v}" for k, v in METRIC_DOCS.items()), *_rows(frame))


def rich_table(title: str, caption: str, header: list[str], rows: list[list[str]]) -> Table:
    """A rich Table of string cells (folded, not cut), captioned on the left."""
    table = Table(title=title, caption=caption, caption_justify="left")
    for h in header:
        table.add_column(h, overflow="fold")
    for r in rows:
        table.add_row(*r)
    return table


def _p(v: float) -> str:
    return "—" if v is None or math.isnan(v) else f"{v:.3g}"


def contrast_rows(table: pd.DataFrame) -> list[list[str]]:
    """contrasts.evaluate's rows as strings (CONTRAST_HEADER's columns); no interval below 3 seeds."""
    rows = []
    for r in table.to_dict("records"):
        digits = 1 if r["metric"] in ("late_length", "collapse_step") else 4
        ci = "—" if math.isnan(r["mean"]) else f"{r['mean']:+.{digits}f}" + (
            "" if math.isnan(r["lo"]) else f" [{r['lo']:+.{digits}f}, {r['hi']:+.{digits}f}]")
        claim = f"|d| < {r['margin']:g}" if r["direction"] == "equal" else \
            {"greater": "> 0", "less": "< 0"}[r["direction"]]
        rows.append([r["name"], f"{r['arm']} − {r['baseline']}", r["metric"], claim, str(r["n"]), ci, _p(r["p"]),
                     _p(r["p_holm"]), _p(r["p_sign_flip"]), _p(r["p_tost"]), _p(r["p_improvement"]),
                     re.split(r" \(|:", r["verdict"])[0]])  # the verdict's reason is printed below the table
    return rows


def markdown_table(frame: pd.DataFrame) -> str:
    return markdown_rows(*_rows(frame))


def markdown_rows(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table of string cells."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def runs_note(metrics: pd.DataFrame) -> str:
    """One line: how many runs, and which are not completed (their numbers are from the steps so far)."""
    unfinished = metrics[metrics["status"] != "completed"]
    note = f"{len(metrics)} runs, {metrics['label'].nunique()} labels"
    if len(unfinished):
        note += f"; not completed ({len(unfinished)}): " + ", ".join(
            f"{r.run} ({r.status}, step {r.steps})" for r in unfinished.itertuples())
    return note
