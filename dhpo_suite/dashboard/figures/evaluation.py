"""Evaluation views: the Table-1 pivot, accuracy vs step, and a problem's samples (pure).

The input frame has one row per (evaluation, benchmark): `label` (row name in Table 1: run · step, or an
evaluation folder's name), `run`, `algorithm`, `step` (NaN for evaluations outside a run), `bench`, `metric`
(the benchmark's headline, e.g. avg@32), `value` (accuracy in [0, 1]) and `avg` (the evaluation's AVG over
benchmarks, as the evaluator wrote it in summary.json).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dhpo_suite.dashboard.figures.curves import empty_figure, run_colors

__all__ = ["summary_rows", "last_checkpoints", "table1", "accuracy_curve", "problem_samples", "problem_overview"]


def summary_rows(summary: dict, *, label: str, run: str = "", algorithm: str = "", step: int | None = None) -> list[dict]:
    """Flatten one summary.json ({"benchmarks": {bench: {headline, <metrics>}}, "AVG": x}) into frame rows."""
    rows = []
    for bench, m in summary.get("benchmarks", {}).items():
        head = m.get("headline", "")
        rows.append(dict(label=label, run=run, algorithm=algorithm, step=step, bench=bench, metric=head,
                         value=m.get(head, float("nan")), avg=summary.get("AVG", float("nan"))))
    return rows


def last_checkpoints(frame: pd.DataFrame) -> pd.DataFrame:
    """Only each run's latest evaluated checkpoint (evaluations outside a run, step NaN, are kept)."""
    if frame.empty:
        return frame
    last = frame.groupby("run")["step"].transform("max")
    return frame[frame["step"].isna() | (frame["step"] == last)]


def table1(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows: algorithm / checkpoint; columns: benchmarks (headline accuracy, %) + AVG (the evaluator's).

    Benchmark columns keep their first-seen order; header cells say which metric (e.g. "aime24 (avg@32)").
    """
    if frame.empty:
        return pd.DataFrame()
    heads = frame.drop_duplicates("bench").set_index("bench")["metric"]
    pivot = frame.pivot_table(index=["label", "algorithm"], columns="bench", values="value", aggfunc="first", sort=False)
    pivot = pivot[[b for b in heads.index if b in pivot.columns]] * 100
    pivot.columns = [f"{b} ({heads[b]})" for b in pivot.columns]
    avg = frame.groupby(["label", "algorithm"], sort=False)["avg"].first() * 100
    pivot["AVG"] = avg.reindex(pivot.index)
    return pivot.round(1)


def accuracy_curve(frame: pd.DataFrame, bench: str | None = None, colors: dict[str, str] | None = None) -> go.Figure:
    """Accuracy (%) vs checkpoint step, one line per run: the AVG when `bench` is None, else that benchmark."""
    f = frame.dropna(subset=["step"])
    if f.empty:
        return empty_figure("Accuracy vs step", "no data: no checkpoint evaluations in the selected runs")
    if bench is None:
        f = f.drop_duplicates(["run", "step"]).assign(value=lambda d: d["avg"])
        title = "AVG accuracy vs step"
    else:
        f = f[f["bench"] == bench]
        title = f"{bench} accuracy vs step"
    colors = colors or run_colors(frame["run"])
    fig = go.Figure()
    for run, g in f.sort_values("step").groupby("run", sort=False):
        fig.add_trace(go.Scatter(x=g["step"], y=g["value"] * 100, mode="lines+markers", name=run,
                                 line_color=colors.get(run)))
    fig.update_layout(title=title, xaxis_title="checkpoint step", yaxis_title="accuracy (%)", height=320,
                      margin=dict(t=50, b=40, l=50, r=10), legend=dict(orientation="h", y=-0.35))
    return fig


def problem_overview(records: list[dict]) -> pd.DataFrame:
    """One row per problem: samples, correct count and accuracy, distinct extracted answers; hardest first."""
    if not records:
        return pd.DataFrame(columns=["problem_id", "samples", "correct", "accuracy", "answers"])
    df = pd.DataFrame(records)
    out = df.groupby("problem_id", sort=False).agg(
        samples=("sample", "size"), correct=("correct", "sum"),
        answers=("extracted", lambda s: len(set(s.dropna()))))
    out["accuracy"] = out["correct"] / out["samples"]
    return out.reset_index().sort_values(["accuracy", "problem_id"], kind="stable").reset_index(drop=True)


def problem_samples(records: list[dict], problem_id: str) -> pd.DataFrame:
    """Every sample of one problem: extracted answer, grade (correct, status, reason), length, finish reason."""
    cols = ["sample", "extracted", "correct", "status", "reason", "n_tokens", "finish_reason"]
    rows = [r for r in records if str(r.get("problem_id")) == str(problem_id)]
    if not rows:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame(rows).sort_values("sample")[cols].reset_index(drop=True)
