"""Evaluation views: the Table-1 pivot, accuracy vs step, and a problem's samples (pure).

The input frame has one row per (evaluation, benchmark): `label` (row name in Table 1: run · step, or an
evaluation folder's name), `run`, `algorithm`, `step` (NaN for evaluations outside a run), `bench`, `metric`
(the benchmark's headline, e.g. avg@32), `value` (accuracy in [0, 1]) and `avg` (the evaluation's AVG over
benchmarks, as the evaluator wrote it in summary.json).
"""

from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go

from dhpo_suite.dashboard.figures.curves import empty_figure, run_colors

__all__ = ["summary_rows", "last_checkpoints", "table1", "accuracy_curve", "problem_samples", "problem_overview",
           "wrong_samples", "compare_problems"]


def summary_rows(summary: dict, *, label: str, run: str = "", algorithm: str = "",
                 step: int | None = None) -> list[dict]:
    """Flatten one summary.json ({"benchmarks": {bench: {headline, <metrics>}}, "AVG": x}) into frame rows."""
    return [dict(label=label, run=run, algorithm=algorithm, step=step, bench=bench, metric=m.get("headline", ""),
                 value=m.get(m.get("headline", ""), float("nan")), avg=summary.get("AVG", float("nan")))
            for bench, m in summary.get("benchmarks", {}).items()]


def last_checkpoints(frame: pd.DataFrame) -> pd.DataFrame:
    """Only each run's latest evaluated checkpoint (evaluations outside a run, step NaN, are kept)."""
    if frame.empty:
        return frame
    last = frame.groupby("run")["step"].transform("max")
    return frame[frame["step"].isna() | (frame["step"] == last)]


def table1(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows: algorithm / checkpoint; columns: benchmarks (headline accuracy, %, first-seen order, the header
    naming the metric: "aime24 (avg@32)") + AVG (the evaluator's)."""
    if frame.empty:
        return pd.DataFrame()
    heads = frame.drop_duplicates("bench").set_index("bench")["metric"]
    pivot = frame.pivot_table(index=["label", "algorithm"], columns="bench", values="value", aggfunc="first",
                              sort=False)
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
    fig.update_layout(title=title, xaxis_title="training step",  # the checkpoint's: on the curves' linked axis
                      yaxis_title="accuracy (%)", height=320,
                      margin=dict(t=50, b=40, l=50, r=10), legend=dict(orientation="h", y=-0.35))
    return fig


_TURNS = (  # (start of the last user turn, its end) of common chat templates: ChatML (Qwen, SmolLM2), Llama 3
    (re.compile(r"<\|im_start\|>user\s*\n(.*?)(?:<\|im_end\|>|$)", re.S)),
    (re.compile(r"<\|start_header_id\|>user<\|end_header_id\|>\s*(.*?)(?:<\|eot_id\|>|$)", re.S)),
)
_SPECIAL = re.compile(r"<\|[^|>]{1,40}\|>|</?s>")


def problem_text(record: dict) -> str:
    """The problem as the model was asked it, not the chat template around it: the record's `problem` field
    when present, else the last user turn of the prompt (ChatML, Llama 3), else the prompt without special
    tokens."""
    if isinstance(record.get("problem"), str) and record["problem"]:
        return record["problem"].strip()
    prompt = str(record.get("prompt") or "")
    for turn in _TURNS:
        found = turn.findall(prompt)
        if found:
            return found[-1].strip()
    return _SPECIAL.sub("", prompt).strip()


def _natural(col: pd.Series) -> pd.Series:
    """Sort key (sort_values' `key`): problem ids with embedded numbers by value ("aime-2" before "aime-10");
    other columns as they are, a change by its size, largest first."""
    if col.name == "change":
        return -col.abs()
    if col.name != "problem_id":
        return col
    return col.map(lambda v: re.sub(r"\d+", lambda m: m.group().zfill(12), str(v)))


def problem_overview(records: list[dict]) -> pd.DataFrame:
    """One row per problem: samples, correct count and accuracy, distinct extracted answers; hardest first,
    ties in natural order of the problem id (numbers by value, not as text)."""
    if not records:
        return pd.DataFrame(columns=["problem_id", "samples", "correct", "accuracy", "answers"])
    df = pd.DataFrame(records)
    out = df.groupby("problem_id", sort=False).agg(
        samples=("sample", "size"), correct=("correct", "sum"),
        answers=("extracted", lambda s: len(set(s.dropna()))))
    out["accuracy"] = out["correct"] / out["samples"]
    return out.reset_index().sort_values(["accuracy", "problem_id"], key=_natural).reset_index(drop=True)


def problem_samples(records: list[dict], problem_id: str) -> pd.DataFrame:
    """Every sample of one problem: extracted answer, grade (correct, status, reason), length, finish reason."""
    cols = ["sample", "extracted", "correct", "status", "reason", "n_tokens", "finish_reason"]
    rows = [r for r in records if str(r.get("problem_id")) == str(problem_id)]
    if not rows:
        return pd.DataFrame(columns=cols)
    return pd.DataFrame(rows).sort_values("sample")[cols].reset_index(drop=True)


def wrong_samples(records: list[dict]) -> pd.DataFrame:
    """Every sample graded wrong (a "wrong only" list): problem id, the problem as asked (problem_text), sample,
    extracted answer, gold, grade status and reason, length, finish reason; problems in natural order, samples
    by number."""
    cols = ["problem_id", "problem", "sample", "extracted", "gold", "status", "reason", "n_tokens", "finish_reason"]
    rows = [r | {"problem": problem_text(r)} for r in records if not r.get("correct")]
    if not rows:
        return pd.DataFrame(columns=cols)
    df = pd.DataFrame(rows).reindex(columns=cols)
    df["gold"] = df["gold"].map(lambda g: ", ".join(map(str, g)) if isinstance(g, list) else g)
    return df.sort_values(["problem_id", "sample"], key=_natural).reset_index(drop=True)


def compare_problems(a: list[dict], b: list[dict], names: tuple[str, str] = ("A", "B")) -> pd.DataFrame:
    """The problems two evaluations share, with each one's accuracy and the difference (B − A), largest
    change first: where one checkpoint (or run) solves what the other does not."""
    ova, ovb = problem_overview(a), problem_overview(b)
    cols = ["problem_id", f"accuracy {names[0]}", f"accuracy {names[1]}", "change"]
    if ova.empty or ovb.empty:
        return pd.DataFrame(columns=cols)
    both = ova[["problem_id", "accuracy"]].merge(ovb[["problem_id", "accuracy"]], on="problem_id",
                                                 suffixes=("_a", "_b"))
    both["change"] = both["accuracy_b"] - both["accuracy_a"]
    both = both.rename(columns={"accuracy_a": cols[1], "accuracy_b": cols[2]})
    return both.sort_values(["change", "problem_id"], key=_natural)[cols].reset_index(drop=True)
