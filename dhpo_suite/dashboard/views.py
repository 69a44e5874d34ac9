"""The chart pages' cached builds (figures and the data behind them), in a module rather than in the page scripts
so that prefetch.py can fill the very cache entries a page's first view reads.

Each page calls the view functions here with its widgets' values; the prefetch calls them with the widgets'
defaults (controls.SMOOTHING, controls.FULL_RANGE, ...). Streamlit keys a cached function by its module, name
and source, and an entry by its arguments: the two calls meet in one entry only because both go through the
same function with arguments computed the same way (tests/dashboard/test_prefetch.py checks that they do)."""

from __future__ import annotations

import dataclasses

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.colors import qualitative

from dhpo_suite.dashboard import data, frames
from dhpo_suite.science import Collapse, CollapseRule, detect_collapse, seed_means
from dhpo_suite.dashboard.controls import Context
from dhpo_suite.dashboard.figures import collapse as fcollapse
from dhpo_suite.dashboard.figures import curves
from dhpo_suite.dashboard.figures import outliers as foutliers
from dhpo_suite.dashboard.figures.evaluation import accuracy_curve
from dhpo_suite.dashboard.figures.grid import grid

__all__ = ["PANELS", "versions", "dynamics_panels", "dynamics_clip", "dynamics_csv", "group_colors", "collapse_view",
           "branches",
           "clip_view", "heatmap_view", "binding_view"]

PANELS = [  # (metric, title, band, extra lines); titles fit half of a 1280 px page
    ("entropy/mean", "Token entropy: p10–p90 band", ("entropy/p10", "entropy/p90"), ()),
    ("length/mean", "Response length: p90 dotted", None, (("length/p90", "p90"),)),
    ("length/truncated_frac", "Truncation rate", None, ()),
    ("reward/mean", "Reward (mean per response)", None, ()),
    ("w/mean", "Mixing weight w: p10–p90 band", ("w/p10", "w/p90"), (("w/p50", "p50"),)),
    ("kl/k3", "KL(π_old‖π), k3: k1 dotted", None, (("kl/k1", "k1"),)),
    ("grad_norm", "Gradient norm (before clipping)", None, ()),
]
"""The Dynamics page's panels, in order (the accuracy curve goes after the first four)."""


def versions(ctx: Context, runs: list[str] | None = None) -> tuple:
    """(run, path, run_version) of each run (default: the selection): the cache key of their scalars (hashing
    the scalars frame itself cost ~30 ms per rerun at 1000 steps)."""
    return tuple((r, ctx.path(r), data.run_version(ctx.path(r))) for r in (ctx.selected if runs is None else runs))


def _colors(ctx: Context) -> tuple:
    """(run, colour) of each selected run: a hashable cache-key argument."""
    return tuple((r, ctx.colors[r]) for r in ctx.selected)


def _stacked(versions: tuple) -> pd.DataFrame:
    """The scalars of the runs `versions`, stacked with a `run` column."""
    return pd.concat([data.scalars(path, v)[0].assign(run=run) for run, path, v in versions], ignore_index=True)


@st.cache_resource(max_entries=8, show_spinner=False)  # only read; shared by the panels, clip fractions and CSV
def _frames(versions: tuple, alpha: float, step_range: tuple, x_axis: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(raw, smoothed) scalars of the runs `versions`, stacked, in the range, on the x axis."""
    raw = _stacked(versions)
    cols = list(raw.columns.drop(["run", "step"]))
    return curves.prepare(raw, cols, 0.0, step_range, x_axis), curves.prepare(raw, cols, alpha, step_range, x_axis)


@st.cache_resource(max_entries=32, show_spinner=False)  # figures are only read (st.plotly_chart copies them)
def _panels(versions: tuple, evals: pd.DataFrame, alpha: float, step_range: tuple, colors: tuple,
            extra: tuple, log_y: bool, x_axis: str, groups: tuple = ()) -> go.Figure:
    raw, f = _frames(versions, alpha, step_range, x_axis)
    colors = dict(colors)
    common = dict(colors=colors, log_y=log_y, legend=False, raw=raw, smoothing=alpha, x=x_axis)
    panels = [(m, m, None, ()) for m in extra] + PANELS
    if groups:  # runs averaged per group (seeds), each curve with its 95 % band; no raw curves
        f = seed_means(f, dict(groups), [m for m, *_ in panels])
        common |= dict(raw=None)
        panels = [(m, title.split(":")[0] + ": mean, 95 % band", (f"{m} lo", f"{m} hi"), ())
                  for m, title, *_ in panels]
    out = [curves.overlay(f, m, title, band=band, extra=list(more), **common) for m, title, band, more in panels]
    out.insert(len(extra) + 4, accuracy_curve(evals, colors=colors))
    return grid(out)


def dynamics_panels(ctx: Context, alpha: float, step_range: tuple, extra: tuple, log_y: bool,
                    x_axis: str, groups: dict[str, str] | None = None) -> go.Figure:
    """The Dynamics panels of the selected runs as one figure of subplots (the browser's cost is per figure);
    `groups` ({run: group label}): each group's runs averaged, with its band (colours: group_colors)."""
    if not groups:
        return _panels(versions(ctx), frames.evals_frame(ctx)[0], alpha, step_range, _colors(ctx), extra, log_y,
                       x_axis)
    colors = tuple({**dict(_colors(ctx)), **group_colors(sorted(set(groups.values())))}.items())
    return _panels(versions(ctx), frames.evals_frame(ctx)[0], alpha, step_range, colors, extra, log_y, x_axis,
                   tuple(sorted(groups.items())))


GROUP_PALETTE = qualitative.Dark2
"""Group colours: none of them a run's colour (runs use Plotly's and D3's palettes)."""


def group_colors(labels: list[str]) -> dict[str, str]:
    """One colour per group label (sorted), as on the Sweep page."""
    return {label: GROUP_PALETTE[i % len(GROUP_PALETTE)] for i, label in enumerate(sorted(labels))}


@st.cache_resource(max_entries=32, show_spinner=False)
def _clip_panel(versions: tuple, alpha: float, step_range: tuple, colors: tuple, clip_modes: tuple,
                x_axis: str) -> go.Figure:
    f = _frames(versions, alpha, step_range, x_axis)[1]
    return curves.clip_fractions(f, ("token", "sequence", "mixed"), colors=dict(colors),
                                 clip_modes=dict(clip_modes), x=x_axis)


def dynamics_clip(ctx: Context, alpha: float, step_range: tuple, x_axis: str) -> go.Figure:
    """The clip fractions of the selected runs (6 subplots, ~12 traces per run)."""
    modes = tuple((r, str(ctx.table.at[r, "clip"])) for r in ctx.selected)
    return _clip_panel(versions(ctx), alpha, step_range, _colors(ctx), modes, x_axis)


def dynamics_csv(versions: tuple, metric: str, alpha: float, step_range: tuple, x_axis: str) -> bytes:
    """The chart of `metric` ("clip/": the clip fractions) as CSV (figures.curves.curve_table)."""
    raw, f = _frames(versions, alpha, step_range, x_axis)
    cols = [c for c in raw.columns if c.startswith("clip/")] if metric == "clip/" else [metric] * (metric in raw)
    return curves.curve_table(raw, f, cols, x_axis, alpha).to_csv(index=False).encode()


WHY = [m for _, ms in fcollapse.WHY_ROWS for m in ms]


@st.cache_resource(max_entries=16, show_spinner=False)  # the figure is only read (st.plotly_chart copies it)
def _why(versions: tuple, rule: tuple, colors: tuple) -> tuple[dict[str, Collapse], go.Figure]:
    raw = _stacked(versions)
    verdicts = {r: detect_collapse(g.set_index("step").get("entropy/mean", pd.Series(dtype=float)),
                                   g.set_index("step").get("length/mean", pd.Series(dtype=float)), CollapseRule(*rule))
                for r, g in raw.groupby("run", sort=False)}
    return verdicts, fcollapse.why_figure(curves.prepare(raw, WHY), verdicts, dict(colors))


def collapse_view(ctx: Context, rule: CollapseRule) -> tuple[dict[str, Collapse], go.Figure]:
    """(verdicts, the five-row figure) of the selected runs: built once per version of the runs, not on every
    rerun (a click, a step typed)."""
    return _why(versions(ctx), dataclasses.astuple(rule), _colors(ctx))


def branches(columns) -> list[str]:
    """The ratio branches a run logged (token, sequence, mixed), from its scalars' columns."""
    return [b for b in ("token", "sequence", "mixed") if f"ratio/{b}/mean" in columns]


@st.cache_resource(max_entries=16, show_spinner=False)  # figures are only read (st.plotly_chart copies them)
def _clip_figure(run: str, path: str, version: tuple, branches: tuple, color: str, clip_mode: str) -> go.Figure:
    scal = data.scalars(path, version)[0].assign(run=run)
    return curves.clip_fractions(curves.prepare(scal, [c for c in scal.columns if c.startswith("clip/")]), branches,
                                 {run: color}, {run: clip_mode})


def clip_view(ctx: Context, run: str, branches: list[str]) -> go.Figure:
    """One run's clip fractions per branch (Clipping and outliers)."""
    path = ctx.path(run)
    return _clip_figure(run, path, data.run_version(path), tuple(branches), ctx.colors[run],
                        str(ctx.table.at[run, "clip"]))


@st.cache_resource(max_entries=16, show_spinner=False)
def _heatmap(path: str, steps: tuple, names: tuple, versions: tuple, has_region: bool,
             title: str, branch: str) -> tuple[go.Figure, list[str]]:
    hists, problems = data.histograms(path, list(steps), list(names), versions)
    counts, edges = foutliers.heatmap_frame(hists)
    telemetry = data.manifest_telemetry(path, data.run_version(path))
    bounds = data.trust_bounds(path, int(counts.index[0]), branch, telemetry) if has_region and len(edges) else None
    return foutliers.log_ratio_heatmap(counts, edges, bounds, title), problems


def heatmap_view(path: str, steps: list[int], step_range: tuple, branch: str, sign: str,
                 columns) -> tuple[go.Figure, list[str]]:
    """The log-ratio heatmap of a branch over at most frames.HEATMAP_STEPS steps of the range, and the problems
    of the files it could not read; `columns`: the run's scalars columns (a branch without clip metrics has no
    trust region to draw)."""
    shown = frames.sample_steps(steps, *step_range)
    return _heatmap(path, tuple(shown), tuple(frames.log_ratio_names(branch, sign)),
                    data.step_versions(path, "distributions", shown), f"clip/{branch}/outside_low" in columns,
                    f"log(ratio) of the {branch} branch ({sign})", branch)


def binding_view(path: str, steps: list[int], step_range: tuple) -> tuple[list[int], pd.DataFrame, list[str]]:
    """(the steps read, the binding-token summary over them, problems): at most frames.SUMMARY_STEPS steps."""
    shown = frames.sample_steps(steps, *step_range, n=frames.SUMMARY_STEPS)
    tables, problems = data.outlier_tables(path, shown, foutliers.SUMMARY_COLUMNS)
    return shown, foutliers.binding_summary(tables), problems
