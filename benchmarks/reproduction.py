"""The reproduction report: each claim of the paper tested on a `dhpo-suite sweep` directory, with intervals.

    .venv/bin/python benchmarks/reproduction.py SWEEP_DIR [--doc docs/reproduction.md] [--figures docs/reproduction]
        [--probes DIR] [--notes FILE]

--probes: a folder of the single-seed runs tried while looking for the setting (their settings and outcomes
become the report's probe table); --notes: a Markdown file of what those probes taught, quoted verbatim
(it names no numbers of its own: the numbers are in the table the script computes).

Reads the runs only through dhpo_suite.runs / dhpo_suite.science.compare (the numbers of `dhpo-suite compare`),
draws small PNG figures (matplotlib) and writes the Markdown report. A verdict follows one rule per claim,
stated in the report beside it: "reproduced" when the 95 % interval of the paired difference lies entirely on
the side the paper claims, "not reproduced" when it lies entirely on the other side, "inconclusive" when it
contains 0 - or when the phenomenon the claim is about did not occur in the setting (e.g. GRPO's entropy did
not fall), which is reported as such, not as evidence either way.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dhpo_suite.runs import RunReader, list_runs
from dhpo_suite.science import compare as cmp
from dhpo_suite.science.tables import fmt_interval, markdown_table
from dhpo_suite.train.sweep import load_or_create

CLIP_COLUMNS = [f"clip/{b}/{k}" for b in ("token", "sequence", "mixed") for k in ("outside_low", "outside_high",
                                                                                 "binding")] + ["kl/k3"]
DEFAULT_DOC, DEFAULT_FIGURES = Path("docs/reproduction.md"), Path("docs/reproduction")
FALL = 0.2  # a series "fell" when its late mean is at least 20 % below its first-steps plateau


def clip_table(root: Path, runs: set[str]) -> pd.DataFrame:
    """Per label: mean over runs and steps of the fraction of tokens outside each branch's trust region and
    of the tokens whose clip binds (the sign that updates are off-policy enough for clipping to matter)."""
    rows = []
    for s in list_runs(root):
        if s.manifest is None or s.path.name not in runs:
            continue
        reader = RunReader(s.path)
        f = reader.scalars(columns=CLIP_COLUMNS)
        row = {"label": cmp.run_label(reader)}
        for b in ("token", "sequence", "mixed"):
            lo, hi, bind = (f"clip/{b}/outside_low", f"clip/{b}/outside_high", f"clip/{b}/binding")
            if lo in f and f[lo].notna().any():
                row[f"{b} outside"] = float((f[lo] + f[hi]).mean())
                row[f"{b} binding"] = float(f[bind].mean())
        row["KL k3"] = float(f["kl/k3"].mean()) if "kl/k3" in f else float("nan")
        rows.append(row)
    return pd.DataFrame(rows).groupby("label", sort=True).mean()


def relative_change(run: pd.DataFrame, metric: str) -> float:
    """Relative change of `metric` in one run, from its first 3 steps to its last quarter."""
    g = run.sort_values("step")[metric].dropna()
    return float(g.tail(max(1, len(g) // 4)).mean() / g.head(3).mean() - 1) if len(g) else float("nan")


def seed_changes(scalars: pd.DataFrame, label: str, metric: str) -> dict[int, float]:
    """Per seed of `label`: the relative change of `metric` from the first 3 steps to the last quarter."""
    return {int(seed): relative_change(g, metric) for seed, g in scalars[scalars["label"] == label].groupby("seed")}


def fell(scalars: pd.DataFrame, label: str, metric: str) -> tuple[float, bool]:
    """Mean relative change of `metric` from the first 3 steps to the last quarter, over the label's seeds."""
    changes = list(seed_changes(scalars, label, metric).values())
    change = float(np.mean(changes)) if changes else float("nan")
    return change, change <= -FALL


PROBE_SETTINGS = {"algo": "algo", "task": "task", "sft_target": "SFT to", "lr": "lr", "ppo_epochs": "epochs",
                  "mini_batches": "mini-batches", "prompts_per_step": "prompts", "group_size": "G",
                  "eval_prompts": "held-out n"}


def probe_table(root: Path) -> pd.DataFrame:
    """One row per run under `root` (the single-seed probes tried before the sweep), in the order they were
    started: the settings that were varied, the steps run (status "running": stopped by hand), held-out reward
    before -> best -> after, and the relative change of the token entropy and response length from the first
    3 steps to the last quarter."""
    rows = []
    for s in list_runs(root):
        if s.manifest is None:
            continue
        reader = RunReader(s.path)
        f = reader.scalars(columns=[cmp.HELDOUT, cmp.HELDOUT_INITIAL, "entropy/mean", "length/mean"])
        if f.empty:
            continue
        c, curve = reader.manifest.config, cmp.heldout_curve(f)
        rows.append({"probe": s.path.name, "started": reader.manifest.started_at,
                     **{name: c.get(key) for key, name in PROBE_SETTINGS.items()}, "seed": reader.manifest.seed,
                     "steps": int(f["step"].max()), "status": reader.manifest.status, "held-out start": curve.iloc[0], "best": curve.max(),
                     "end": curve.iloc[-1], "entropy start": float(f["entropy/mean"].head(3).mean()),
                     "entropy change": relative_change(f, "entropy/mean"),
                     "length change": relative_change(f, "length/mean")})
    if not rows:
        return pd.DataFrame()
    table = pd.DataFrame(rows).sort_values("started")
    return table.assign(started=pd.to_datetime(table["started"]).dt.strftime("%m-%d %H:%M"))


def wall_times(root: Path, runs: pd.Series) -> str:
    """Median wall time of a run (manifest start to end: the RL steps, not the cached warm start) and the
    span of the whole sweep, from the runs' manifests."""
    spans, paths = [], {s.path.name: s.path for s in list_runs(root)}
    for run in runs:
        m = RunReader(paths[run]).manifest
        if m.started_at and m.ended_at:
            spans.append((pd.Timestamp(m.started_at), pd.Timestamp(m.ended_at)))
    if not spans:
        return "wall times not recorded"
    per_run = np.array([(b - a).total_seconds() for a, b in spans]) / 60
    total = (max(b for _, b in spans) - min(a for a, _ in spans)).total_seconds() / 60
    return (f"a run took {np.median(per_run):.1f} min (median; {per_run.min():.1f}-{per_run.max():.1f} min as the "
            f"machine's load varied); the sweep's runs spanned {total:.0f} min")


def setting_of(sweep) -> str:
    """The off-policy degree and the task of the sweep's runs, from its pass-through options."""
    args = dict(zip(sweep.train_args[::2], sweep.train_args[1::2]))
    epochs, minis = args.get("--ppo-epochs", "1"), args.get("--mini-batches", "2")
    return (f"{epochs} PPO epoch(s) × {minis} mini-batches per rollout: every optimizer step after the first of a "
            f"rollout is off-policy, so ratios can leave their trust regions")


def model_of(sweep) -> str:
    """What the sweep's runs trained, from its pass-through --model (the trainer's default: the tiny model)."""
    model = dict(zip(sweep.train_args[::2], sweep.train_args[1::2])).get("--model", "tiny")
    if model == "tiny":
        return "tiny Qwen3, 0.84 M parameters, SFT warm start per seed"
    if model == "smollm2-135m":
        return "SmolLM2-135M-Instruct, 135 M parameters, pretrained: the same starting model for every seed"
    return f"model `{model}`"


def verdict(iv: cmp.Interval, sign: int) -> str:
    """sign +1: the paper claims the difference is > 0; -1: < 0."""
    if math.isnan(iv.lo):
        return "inconclusive (fewer than two shared seeds)"
    lo, hi = sorted((iv.lo * sign, iv.hi * sign))  # on the claimed side when lo > 0
    if lo > 0:
        return "reproduced"
    if hi < 0:
        return "not reproduced (the interval lies on the other side)"
    return "inconclusive (the interval contains 0)"


def plot_bands(scalars: pd.DataFrame, metric: str, labels: list[str], title: str, path: Path,
               smooth: int = 1) -> None:
    """Mean across seeds per label with its 95 % band; `smooth` > 1: each run's series is first averaged over a
    centred window of that many steps (per-step entropy of 64 responses is noisy)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = scalars[scalars["label"].isin(labels)].sort_values(["run", "step"])
    if smooth > 1:
        frame = frame.assign(**{metric: frame.groupby("run")[metric].transform(
            lambda x: x.rolling(smooth, center=True, min_periods=1).mean())})
        title += f"\n({smooth}-step moving average per run)"
    bands = cmp.curve_bands(frame, metric)
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=90)
    for label in labels:
        g = bands[bands["label"] == label]
        if g.empty:
            continue
        (line,) = ax.plot(g["step"], g["mean"], label=f"{label} (n={int(g['n'].max())})", lw=1.6)
        ax.fill_between(g["step"], g["lo"], g["hi"], color=line.get_color(), alpha=0.15, lw=0)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def from_start(scalars: pd.DataFrame) -> pd.DataFrame:
    """Held-out reward minus each run's own value before training (seeds start from different warm-started
    models, 0.19-0.36 here: their spread would otherwise hide the change the algorithms make)."""
    start = scalars.groupby("run")[cmp.HELDOUT_INITIAL].transform("first")
    return scalars.assign(**{cmp.HELDOUT: scalars[cmp.HELDOUT] - start, cmp.HELDOUT_INITIAL: 0.0})


def diff_row(diffs: pd.DataFrame, label: str, metric: str) -> cmp.Interval:
    row = diffs[diffs["label"] == label]
    return row.iloc[0][metric] if len(row) else cmp.Interval(float("nan"), float("nan"), float("nan"), 0)


def side_note(vs_grpo: pd.DataFrame, metric: str) -> str:
    """Which objectives' paired interval against GRPO lies above / below 0 for `metric` and for the final
    held-out reward: whether a higher late value goes with higher accuracy in this setting, for every objective."""
    def sides(m: str) -> str:
        above = [r.label for r in vs_grpo.itertuples() if getattr(r, m).lo > 0]
        below = [r.label for r in vs_grpo.itertuples() if getattr(r, m).hi < 0]
        return f"above GRPO's: {', '.join(above) or 'none'}; below: {', '.join(below) or 'none'}"

    return (f"every objective against GRPO (paired 95 % interval entirely on one side of 0): {metric} "
            f"{sides(metric)}. Final held-out reward {sides('final_reward')}")


def claims(metrics: pd.DataFrame, scalars: pd.DataFrame) -> list[dict]:
    """Each claim: text, evidence lines, verdict."""
    vs_grpo = cmp.paired_differences(metrics, "grpo")
    dhpo = [lab for lab in ("dhpo-e-branch", "dhpo-a-branch") if lab in set(metrics["label"])]
    out = []
    ent_change, ent_fell = fell(scalars, "grpo", "entropy/mean")
    len_change, len_fell = fell(scalars, "grpo", "length/mean")
    for name, metric, change, happened, fig in (
            ("GRPO's token entropy collapses while DHPO keeps entropy higher late in training (Figs. 1-2)",
             "late_entropy", ent_change, ent_fell, "entropy.png"),
            ("GRPO's response length collapses; DHPO's stays longer (Figs. 1-2)", "late_length", len_change,
             len_fell, "length.png")):
        series = "entropy/mean" if metric == "late_entropy" else "length/mean"
        per_seed = ", ".join(f"seed {k} {v:+.0%}" for k, v in seed_changes(scalars, "grpo", series).items())
        others = ", ".join(f"{lab} {fell(scalars, lab, series)[0]:+.0%}" for lab in sorted(set(metrics["label"]))
                           if lab != "grpo")
        lines = [f"GRPO's {metric.split('_')[1]} changed by {change:+.1%} from its first 3 steps to the last "
                 f"quarter (mean over seeds; {per_seed}); the rule: a fall of at least {FALL:.0%} is a collapse.",
                 f"the same change for the others (mean over seeds): {others}",
                 f"the dashboard's stricter detector (entropy down 50 % and length down 30 %): GRPO collapsed in "
                 f"{int(metrics[metrics.label == 'grpo'].collapsed.sum())}/{(metrics.label == 'grpo').sum()} runs."]
        lines.append(side_note(vs_grpo, metric))
        verdicts = []
        for lab in dhpo:
            iv = diff_row(vs_grpo, lab, metric)
            lines.append(f"{lab} − grpo, {metric}: {fmt_interval(iv, 3)} ({iv.n} paired seeds)")
            verdicts.append(verdict(iv, +1))
        past = sum(c <= -FALL for c in seed_changes(scalars, "grpo", series).values())
        each = "; ".join(f"{lab}: {x}" for lab, x in zip(dhpo, verdicts))
        v = each if happened else (
            f"inconclusive: the collapse the claim is about did not occur by the rule (GRPO's series changed by "
            f"{change:+.1%} on average, short of −{FALL:.0%}; {past} of {(metrics.label == 'grpo').sum()} seeds "
            f"passed it). The higher-late-{series.split('/')[0]} part alone, for the record: {each}")
        out.append({"claim": name, "evidence": lines, "verdict": v, "figure": fig})
    start = scalars.groupby("run")[cmp.HELDOUT_INITIAL].first()
    change = metrics.set_index("run")["final_reward"] - start
    per_label = change.groupby(metrics.set_index("run")["label"]).mean()
    lines = ["change of the held-out reward from each run's start to its end, mean over seeds: "
             + ", ".join(f"{k} {v:+.3f}" for k, v in per_label.items())]
    verdicts = []
    for lab in dhpo:
        iv = diff_row(vs_grpo, lab, "final_reward")
        lines.append(f"{lab} − grpo, final held-out reward: {fmt_interval(iv, 3)}")
        verdicts.append(f"{lab}: {verdict(iv, +1)}")
    out.append({"claim": "DHPO reaches higher accuracy than GRPO (Table 1)", "evidence": lines,
                "verdict": "; ".join(verdicts), "figure": "heldout.png"})
    lines, verdicts = [], []
    for variant in ("dhpo-e", "dhpo-a"):
        b, u = f"{variant}-branch", f"{variant}-unified"
        if not {b, u} <= set(metrics["label"]):
            continue
        d = cmp.paired_differences(metrics, u)
        osc, fin = diff_row(d, b, "oscillation"), diff_row(d, b, "final_reward")
        lines.append(f"{b} − {u}: oscillation {fmt_interval(osc, 3)}; final held-out reward {fmt_interval(fin, 3)}")
        equal = "no accuracy difference resolved: its interval contains 0" if not math.isnan(fin.lo) and \
            fin.lo <= 0 <= fin.hi else "the accuracies differ, or no interval"
        verdicts.append(f"{variant}: {verdict(osc, -1)} ({equal})")
    out.append({"claim": "Branch-specific clipping oscillates less than unified clipping at equal final accuracy "
                         "(Fig. 3)", "evidence": lines, "verdict": "; ".join(verdicts) or "inconclusive: no clip "
                         "ablation in the sweep", "figure": "clip.png"})
    return out


def glance(verdict: str) -> str:
    """A verdict without its reasons (the parentheses), for the summary at the top of the report."""
    short = re.sub(r" \([^()]*\)", "", verdict)
    return short.replace(" the claim is about", "").replace(". The higher-late-", "; the higher-late-").replace(
        " part alone, for the record:", " part:")


def write_report(root: Path, doc: Path, figures: Path, probes: Path | None = None, notes: Path | None = None,
                 also: list[Path] | None = None) -> str:
    sweep = load_or_create(root, None)
    metrics, scalars, problems = cmp.load_sweep(root)
    unfinished = sorted(metrics.loc[metrics["status"] != "completed", "run"])
    metrics = metrics[metrics["status"] == "completed"]  # a final value needs the last step
    scalars = scalars[scalars["run"].isin(set(metrics["run"]))]
    labels = sorted(metrics["label"].unique())
    figures.mkdir(parents=True, exist_ok=True)
    main = [lab for lab in ("grpo", "gspo", "gmpo", "cispo", "dhpo-a-branch", "dhpo-e-branch") if lab in labels]
    clip = [lab for lab in labels if lab.startswith("dhpo")]
    plot_bands(scalars, "entropy/mean", main, "Token entropy (nats), mean and 95 % band across seeds",
               figures / "entropy.png", smooth=5)
    plot_bands(scalars, "length/mean", main, "Response length (tokens)", figures / "length.png", smooth=5)
    rel_scalars = from_start(scalars)
    plot_bands(rel_scalars, cmp.HELDOUT, main, "Held-out reward minus its value before training",
               figures / "heldout.png")
    plot_bands(rel_scalars, cmp.HELDOUT, clip, "Held-out reward minus its start: branch vs unified clipping",
               figures / "clip.png")
    first = scalars.groupby("seed")[cmp.HELDOUT_INITIAL].first()
    initial = f"{first.mean():.3f} on average (" + ", ".join(f"seed {k}: {v:.3f}" for k, v in first.items()) + ")"
    rel = figures.relative_to(doc.parent) if figures.is_relative_to(doc.parent) else figures
    counts = metrics.groupby("label").size()
    task = RunReader(next(s.path for s in list_runs(root) if s.path.name == metrics["run"].iloc[0])).manifest.task
    sub_sweeps = [(f.parent, load_or_create(f.parent, None)) for f in sorted(root.glob("*/sweep.json"))]
    found = claims(metrics, scalars)
    lines = [
        f"# Reproduction of the paper's claims at toy scale: {model_of(sweep).split(',')[0]}",
        "",
        f"Generated by `benchmarks/reproduction.py {root}"
        + (f" --doc {doc}" if doc != DEFAULT_DOC else "") + (f" --figures {figures}" if figures != DEFAULT_FIGURES
                                                               else "")
        + (f" --probes {probes}" if probes is not None else "") + (f" --notes {notes}" if notes is not None else "")
        + "".join(f" --also {a}" for a in also or []) + f"` on {time.strftime('%Y-%m-%d', time.gmtime())} "
        f"from a `dhpo-suite sweep` directory; every number below is computed from its run directories "
        f"(`dhpo-suite compare {root}` prints the same tables).",
        "",
        "## Verdicts at a glance",
        "",
        *[f"- {c['claim']}: **{glance(c['verdict'])}**" for c in found],
        "",
        *[f"Also: [{a.read_text().splitlines()[0].lstrip('# ')}]({os.path.relpath(a, doc.parent)}), a report of "
          "another sweep by this script.\n" for a in also or []],
        "## Setting",
        "",
        f"- grid: {', '.join(sweep.algos)}; DHPO clip modes {', '.join(sweep.clips) or 'default'}; seeds "
        f"{', '.join(map(str, sweep.seeds))}: {len(sweep.cells()) + sum(len(g.cells()) for _, g in sub_sweeps)} runs "
        f"planned (the sweeps in subfolders included); "
        f"completed runs used: **{len(metrics)}** (per label: {', '.join(f'{k} {v}' for k, v in counts.items())})"
        + (f"; not completed, left out: {', '.join(unfinished)}" if unfinished else ""),
        *[f"- and the sweep in `{sub.relative_to(root)}/`: {', '.join(g.algos)}; DHPO clip modes "
          f"{', '.join(g.clips) or 'default'}; seeds {', '.join(map(str, g.seeds))}; its runs' options are "
          + ("the same" if g.train_args == sweep.train_args else f"`{' '.join(g.train_args)}`")
          for sub, g in sub_sweeps],
        f"- every run: `dhpo-suite train {' '.join(sweep.train_args)}` ({model_of(sweep)}; `{task}` task; the objectives' paper defaults: seq-mean-token-mean "
        "aggregation, GRPO ε 0.2, DHPO token/sequence ε 0.2/0.28, GSPO 3e-4/4e-4, GMPO 0.4, CISPO 10/0.2)",
        f"- cost on this shared 2-core machine (runs in parallel, one torch thread each): "
        f"{wall_times(root, metrics['run'])}",
        "- a seed fixes the starting model (the tiny model's warm start is per seed), the prompts and the first "
        "rollout for every algorithm "
        "(tested in tests/science/test_sweep.py), so differences are paired over seeds",
        "- intervals: 95 % percentile bootstrap over seeds (`scipy.stats.bootstrap`); with this few seeds they "
        "understate the uncertainty, so a verdict of 'reproduced' here is weak evidence",
        "",
        f"Held-out reward before training (the starting model, sampled with each seed): {initial}. Every run's "
        "curve is in the figures below.",
        "",
        f"Off-policy updates ({setting_of(sweep)}); the measured fractions of tokens outside each trust region "
        "and of tokens whose clip binds (mean over steps and runs):",
        "",
        clip_table(root, set(metrics["run"])).to_markdown(floatfmt=".4f"),
        "",
        "## Claims and verdicts",
        "",
    ]
    for c in found:
        lines += [f"### {c['claim']}", "", f"![{c['figure']}]({rel / c['figure']})", ""]
        lines += [f"- {e}" for e in c["evidence"]]
        lines += ["", f"**Verdict: {c['verdict']}.**", ""]
    lines += ["## All outcomes", "", "Per algorithm, mean [95 % CI] across seeds:", "",
              markdown_table(cmp.summarize(metrics)), "",
              "Paired differences against GRPO over shared seeds:", "",
              markdown_table(cmp.paired_differences(metrics, "grpo")), "",
              "Definitions: " + "; ".join(f"**{k}**: {v}" for k, v in cmp.METRIC_DOCS.items()) + ".", ""]
    lines += ["## How the setting was found", ""] if notes is not None or probes is not None else []
    if notes is not None:
        lines += [notes.read_text().strip(), ""]
    if probes is not None:
        table = probe_table(probes)
        lines += [f"The probes (`{probes}`; single seed each, not part of the sweep), in the order they were run; "
                  "held-out reward before training, at its best and after the last step; entropy and length "
                  "change: from the first 3 steps to the last quarter:", "",
                  table.to_markdown(index=False, floatfmt=".3g") if len(table) else "(no probe runs found)", ""]
    if problems:
        lines += ["Files skipped while reading: " + "; ".join(problems), ""]
    text = "\n".join(lines)
    doc.write_text(text)
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sweep", type=Path)
    ap.add_argument("--doc", type=Path, default=DEFAULT_DOC)
    ap.add_argument("--figures", type=Path, default=DEFAULT_FIGURES)
    ap.add_argument("--probes", type=Path, help="folder of the single-seed probe runs (the probe table)")
    ap.add_argument("--notes", type=Path, help="Markdown: what the probes taught (quoted verbatim)")
    ap.add_argument("--also", type=Path, action="append", help="another report of this script to link at the top")
    a = ap.parse_args()
    print(write_report(a.sweep, a.doc, a.figures, a.probes, a.notes, a.also))
    print(json.dumps({"doc": str(a.doc), "figures": sorted(p.name for p in a.figures.glob("*.png"))}))


if __name__ == "__main__":
    main()
