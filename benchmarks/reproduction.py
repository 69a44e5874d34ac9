"""The reproduction report: a sweep's pre-registered contrasts, its manipulation checks and verdicts, from kept data.

    .venv/bin/python benchmarks/reproduction.py SWEEP_DIR --data DATA [--doc docs/reproduction.md]
        [--figures docs/reproduction] [--notes FILE] [--also OTHER.md]
    .venv/bin/python benchmarks/reproduction.py --from-data DATA [the same options]

The first form exports the sweep's kept data (dhpo_suite.science.kept: runs.csv, scalars.csv.gz, metrics.csv,
sweep.json, prereg.json, update_distance.json; a few MB, meant to be committed) into DATA; both forms then write
the report from DATA alone, so `--from-data` regenerates it byte for byte in a fresh clone, without training.
Nothing in the report depends on the clock or on the machine that regenerates it.

The numbers are `dhpo-suite compare`'s (dhpo_suite.science.analysis): per-label t-intervals, and for each
pre-registered contrast the paired t-interval, t-test and Holm-adjusted p, the exact sign-flip p, TOST for declared
equalities, P(improvement) and a power line; the manipulation checks come first, and a verdict is the
pre-registration's rule (dhpo_suite.science.contrasts) or "this setting cannot resolve the claim". Figures show the
paired differences (arm − baseline, per seed, then mean with a 95 % t band across seeds). Without a
pre-registration the report has no verdicts, only descriptive tables.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dhpo_suite.science import checks as chk
from dhpo_suite.science import compare as cmp
from dhpo_suite.science import kept
from dhpo_suite.science import mechanism as mech
from dhpo_suite.science.analysis import Analysis, analyse
from dhpo_suite.science.tables import CONTRAST_HEADER, contrast_rows, markdown_rows, markdown_table
from dhpo_suite.train.embedded.config import TrainConfig
from dhpo_suite.train.sweep import load_or_create

DEFAULT_DOC, DEFAULT_FIGURES = Path("docs/reproduction.md"), Path("docs/reproduction")
SERIES = {"final_reward": cmp.HELDOUT, "reward_auc": cmp.HELDOUT, "residual_sd": cmp.HELDOUT,
          "late_entropy": "entropy/mean", "collapse_step": "entropy/mean", "late_length": "length/mean"}
FIGURE = {cmp.HELDOUT: "diff-heldout.png", "entropy/mean": "diff-entropy.png", "length/mean": "diff-length.png"}
PAPER_STEPS_PER_ROLLOUT = 2  # Appendix D: 512 prompts per rollout, mini-batch 256
SERIES_TITLE = {cmp.HELDOUT: "held-out reward", "entropy/mean": "token entropy (nats)",
                "length/mean": "response length (tokens)"}


def model_of(train_args) -> str:
    """What the sweep's runs trained, from its pass-through --model (the trainer's default: the tiny model)."""
    model = dict(zip(train_args[::2], train_args[1::2])).get("--model", "tiny")
    if model == "tiny":
        return "tiny Qwen3, 0.84 M parameters, SFT warm start per seed"
    if model == "smollm2-135m":
        return "SmolLM2-135M-Instruct, 135 M parameters, pretrained: the same starting model for every seed"
    return f"model `{model}`"


def sweep_command(source: str, sub: str | None, grid) -> str:
    """The `dhpo-suite sweep` command that made (sub-)sweep `grid` (sweep.json holds everything it names)."""
    out = f"{source}/{sub}" if sub else source
    parts = ["dhpo-suite sweep", out, "--algos", ",".join(grid.algos), "--seeds", ",".join(map(str, grid.seeds))]
    parts += ["--clip", ",".join(grid.clips)] if grid.clips else []
    parts += ["--prereg", "prereg.json"] if grid.prereg_sha256 else []
    return " ".join([*parts, *grid.train_args])


def commands(data: Path, doc: Path, figures: Path, notes: Path | None, also: list[Path]) -> list[str]:
    """The exact commands behind the report, in order: the sweep(s), the export, this script."""
    source = json.loads((data / "kept.json").read_text())["source"] if (data / "kept.json").exists() else "SWEEP"
    lines = [sweep_command(source, None, load_or_create(data, None))]
    for sub in sorted(data.glob("*/sweep.json")):
        lines.append(sweep_command(source, sub.parent.name, load_or_create(sub.parent, None)))
    lines.append(f"dhpo-suite compare {source} --export {data}")
    this = f".venv/bin/python benchmarks/reproduction.py --from-data {data}"
    this += f" --doc {doc}" if doc != DEFAULT_DOC else ""
    this += f" --figures {figures}" if figures != DEFAULT_FIGURES else ""
    this += f" --notes {notes}" if notes is not None else ""
    this += "".join(f" --also {a}" for a in also)
    return [*lines, this]


def cost(data: Path) -> str:
    """Median wall time of a run and how long runs were running (the union of their intervals: a sweep resumed
    later does not count the hours between), from the runs' start and end times."""
    runs = kept.run_table(data).dropna(subset=["started_at", "ended_at"])
    if runs.empty:
        return "wall times not recorded"
    start, end = pd.to_datetime(runs["started_at"]), pd.to_datetime(runs["ended_at"])
    per_run = (end - start).dt.total_seconds().to_numpy() / 60
    busy, until = 0.0, None
    for s, e in sorted(zip(start, end)):
        if until is None or s > until:
            busy, until = busy + (e - s).total_seconds(), e
        elif e > until:
            busy, until = busy + (e - until).total_seconds(), e
    return (f"a run took {np.median(per_run):.1f} min (median; {per_run.min():.1f}-{per_run.max():.1f} min, with "
            f"however many runs shared the machine); runs were running for {busy / 60:.0f} min in all, ending "
            f"{end.max():%Y-%m-%d} (benchmarks/RESULTS.md has the measured cost)")


def paired_curves(scalars: pd.DataFrame, arm: str, baseline: str, series: str, smooth: int) -> pd.DataFrame:
    """(step, seed, value) of arm − baseline on `series` per shared seed and step (each run's series first
    averaged over a centred window of `smooth` steps; the held-out reward from its step-0 value)."""
    def wide(label: str) -> pd.DataFrame:
        g = scalars[scalars["label"] == label]
        if series not in g:
            return pd.DataFrame()
        w = g.pivot_table(index="step", columns="seed", values=series, aggfunc="mean")
        if series == cmp.HELDOUT and cmp.HELDOUT_INITIAL in g:
            w.loc[0] = g.groupby("seed")[cmp.HELDOUT_INITIAL].first()
        w = w.sort_index().dropna(how="all")
        return w.rolling(smooth, center=True, min_periods=1).mean() if smooth > 1 else w

    diff = wide(arm) - wide(baseline)
    if diff.empty:
        return pd.DataFrame(columns=["step", "seed", "value"])
    return diff.stack().rename("value").reset_index()


def plot_differences(a: Analysis, series: str, pairs: list[tuple[str, str]], path: Path) -> bool:
    """Mean across seeds of arm − baseline on `series`, per pair, with its 95 % t band (none below 3 seeds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    smooth = 1 if series == cmp.HELDOUT else 5
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=90)
    drawn = False
    for arm, baseline in pairs:
        d = paired_curves(a.scalars, arm, baseline, series, smooth)
        if d.empty:
            continue
        band = [(step, cmp.interval(g["value"])) for step, g in d.groupby("step")]
        steps = [s for s, _ in band]
        (line,) = ax.plot(steps, [iv.mean for _, iv in band], lw=1.6,
                          label=f"{arm} − {baseline} (n={max(iv.n for _, iv in band)})")
        ax.fill_between(steps, [iv.lo for _, iv in band], [iv.hi for _, iv in band], color=line.get_color(),
                        alpha=0.15, lw=0)
        drawn = True
    ax.axhline(0, color="black", lw=0.8)
    ax.set_title(f"Paired difference in {SERIES_TITLE[series]}: mean and 95 % t band across seeds"
                 + (f"\n({smooth}-step moving average per run)" if smooth > 1 else ""), fontsize=10)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
    return drawn


def figures_of(a: Analysis, figures: Path) -> dict[str, str]:
    """One paired-difference figure per series the contrasts are about; {series: file name}."""
    figures.mkdir(parents=True, exist_ok=True)
    out = {}
    for series in dict.fromkeys(SERIES[k.metric] for k in a.prereg.contrasts):
        pairs = list(dict.fromkeys((k.arm, k.baseline) for k in a.prereg.contrasts if SERIES[k.metric] == series))
        name = FIGURE[series]
        if plot_differences(a, series, pairs, figures / name):
            out[series] = name
    return out


def option(train_args, name: str):
    """A train option as the sweep gave it, else TrainConfig's default (e.g. `--ppo-epochs` -> 4)."""
    given = dict(zip(train_args[::2], train_args[1::2]))
    key = "--" + name.replace("_", "-")
    return type(getattr(TrainConfig(), name))(given[key]) if key in given else getattr(TrainConfig(), name)


def _iv(iv, f: str = "{:+.3f}") -> str:
    return f.format(iv.mean) + ("" if np.isnan(iv.lo) else f" [{f.format(iv.lo)}, {f.format(iv.hi)}]")


def regime_lines(a: Analysis, train_args) -> list[str]:
    """The glance list's first bullets: optimizer steps per rollout against the paper's, and whether any arm
    learned (held-out reward before training to after the last step, per label)."""
    epochs, minis = option(train_args, "ppo_epochs"), option(train_args, "mini_batches")
    k = epochs * minis
    rows = mech.mechanism_rows(a.source, a.metrics, a.scalars)
    learned = [r.label for r in rows if r.change.lo > 0]
    fell = all(r.change.mean <= 0 for r in rows)
    verdict = ("**no arm learned**: the accuracy verdicts below say which objective degrades least under this "
               "much reuse of a rollout, not which learns more" if fell else
               f"arms whose interval lies above 0: {', '.join(learned) or 'none'}")
    return [f"- **regime**: {epochs} PPO epoch{'s' * (epochs != 1)} × {minis} mini-batches = **{k} optimizer steps "
            f"per rollout** ({k - 1} of them off-policy); the paper's Appendix D has {PAPER_STEPS_PER_ROLLOUT} "
            "(512 prompts, mini-batch 256: 1 off-policy)",
            "- **did any arm learn?** held-out reward after the last step minus before training, per label: "
            + "; ".join(f"{r.label} {_iv(r.change)} ({r.up}/{r.change.n} seeds up)" for r in rows) + f": {verdict}",
            "- **mechanism** (section \"Mechanism\"): gradient kept on the tokens whose own clip binds (the "
            "trust-region leak) / KL per step / final held-out reward, per label: "
            + "; ".join(f"{r.label} {r.leak.mean:.2f} / {r.kl.mean:.4f} / {r.final.mean:.3f}" for r in rows)
            + f": in order of leak, KL per step {mech.monotone([r.kl.mean for r in rows])} and the final reward "
            f"{mech.monotone([r.final.mean for r in rows])}"]


def ungated_note(a: Analysis, k) -> str:
    """For a family contrast on late entropy/length registered without `needs_collapse` while the collapse a
    sibling contrast needs did not occur: what the contrast then measures (else "")."""
    series = SERIES[k.metric]
    missed = [(key.split(" ")[0], iv) for key, (iv, ok) in a.checks.collapse.items() if key.endswith(" " + series)
              and not ok]
    if k.needs_collapse or k.name not in a.prereg.family or k.metric not in ("late_entropy", "late_length") \
            or not missed:
        return ""
    base, iv = missed[0]
    own = cmp.interval(list(chk.relative_changes(a.scalars, k.arm, series).values()))
    change = {r.label: r.change for r in mech.mechanism_rows(a.source, a.metrics, a.scalars)}.get(k.arm)
    pct = "{:+.0%}"
    return (f" — *read it as what it is*: registered without the collapse gate of its sibling contrast; no collapse "
            f"occurred ({base}'s {series} changed by {_iv(iv, pct)}), while {k.arm}'s own {series} changed by "
            f"{_iv(own, pct)}" + (f" and its held-out reward by {_iv(change)}" if change else "") +
            f": it shows {k.arm} holding its {series.split('/')[0]} above {k.baseline}'s under this regime, not a "
            "collapse avoided")


def mechanism_section(a: Analysis) -> list[str]:
    """The leak beside KL per step, update size and accuracy, per label, and the orders the data shows."""
    rows = mech.mechanism_rows(a.source, a.metrics, a.scalars)
    if not rows:
        return []
    pct = "{:.1%}"
    table = [[r.label, f"{_iv(r.leak, pct)} (`{r.branch}`)", f"{r.binding:.2%}",
              "—" if np.isnan(r.sequence_above) else f"{r.sequence_above:.2%}", _iv(r.kl, "{:.4f}"),
              "—" if np.isnan(r.update[1]) else f"{r.update[1]:.2f}× ({r.update[0]:.2f}-{r.update[2]:.2f})",
              _iv(r.final, "{:.3f}"), f"{_iv(r.change)} ({r.up}/{r.change.n} up)"] for r in rows]
    header = ["label", "leak: gradient kept on binding tokens", "binding", "s above its region", "KL per step",
              "one-step update / baseline's (range)", "final held-out", "change from start"]
    order = " ≤ ".join(f"{r.label} ({r.leak.mean:.2f})" for r in rows)
    along = [("KL per step", [r.kl.mean for r in rows]), ("the one-step update", [r.update[1] for r in rows]),
             ("the final held-out reward", [r.final.mean for r in rows])]
    alike = [[r for r in rows if r.leak.mean == v] for v in dict.fromkeys(r.leak.mean for r in rows)]
    alike = [g for g in alike if len(g) > 1 and g[0].kl.mean > 0 and g[-1].kl.mean / g[0].kl.mean > 1.25]
    return ["## Mechanism: a leaky trust region", "",
            "Per label (95 % t-intervals across seeds): the **trust-region leak**, the share of gradient kept on the "
            "tokens whose own clip binds (science/leak.py; its derivation from eqs. 11, 16-17 is in "
            "docs/objectives.md), the share of tokens where that clip binds, the share whose sequence ratio s lay "
            "above its region, the KL per step (`mean_kl`), the one-step update measured against the baseline's "
            "from the same state and rollout (update_distance.json: mean over checkpoints, and range), and the "
            "held-out reward.", "", markdown_rows(header, table), "",
            f"Ordered by leak (ties by KL per step): {order}. Along this order "
            + ", ".join(f"{name} {mech.monotone(v)}" for name, v in along) + "."
            + "".join(f" {', '.join(r.label for r in g)} leak alike ({g[0].leak.mean:.2f}) yet their KL per step "
                      f"spans {g[0].kl.mean:.4f}-{g[-1].kl.mean:.4f} ({g[-1].kl.mean / g[0].kl.mean:.1f}×): the leak "
                      "is not the whole of the difference there." for g in alike), ""]


def residual_note(a: Analysis, train_args) -> str:
    """residual_sd beside the binomial sd of one held-out evaluation (a 0/1 reward per problem)."""
    n = option(train_args, "eval_prompts")
    p = float(a.scalars[cmp.HELDOUT].mean()) if cmp.HELDOUT in a.scalars else float("nan")
    sd = a.metrics.groupby("label")["residual_sd"].mean().dropna()
    if sd.empty or np.isnan(p):
        return ""
    b = np.sqrt(p * (1 - p) / n)
    return (f"**residual_sd and the evaluation's noise**: one evaluation of {n} held-out problems at the mean "
            f"held-out reward {p:.3f} has a binomial sd of √(p(1−p)/n) = {b:.3f}; the labels' mean residual sd is "
            f"{sd.min():.3f}-{sd.max():.3f} ({sd.min() / b:.1f}-{sd.max() / b:.1f}× that sd). A residual sd near 1× "
            "is one evaluation's sampling error: no arm can show itself steadier than that.")


def verdict_section(a: Analysis, doc: Path, figures: Path) -> list[str]:
    rel = Path(os.path.relpath(figures, doc.parent))
    names = figures_of(a, figures)
    lines = ["## Verdicts at a glance", "",
             f"From the pre-registration (`prereg.json`, sha256 {a.prereg.sha256[:12]}…, registered in sweep.json "
             f"before the runs): primary metric {a.prereg.primary_metric}; a family of {len(a.prereg.family)} "
             f"contrasts, Holm-adjusted at α {a.prereg.alpha:g}. The manipulation checks come first.", ""]
    lines += regime_lines(a, load_or_create(a.source, None).train_args)
    notes = {k.name: ungated_note(a, k) for k in a.prereg.contrasts}
    lines += [f"- **{r.name}** ({r.claim or r.arm + ' vs ' + r.baseline}): **{r.verdict}**{notes[r.name]}"
              for r in a.contrasts.itertuples()]
    lines += ["", "## Manipulation checks", "", *[f"- {line}" for line in a.checks.lines], "",
              "## Contrasts", "", "Paired over the seeds both labels share: the mean difference (arm − baseline) "
              "with its 95 % Student-t interval (none below 3 seeds), the two-sided paired t-test p, the Holm "
              "adjustment over the family of the p each verdict reads (the TOST p for an equality), the exact "
              "sign-flip permutation p, TOST p for a declared equality, and "
              "P(improvement): the chance that a run of the arm beats a run of the baseline in the claimed "
              "direction, over all pairs of runs.", "",
              markdown_rows(CONTRAST_HEADER, contrast_rows(a.contrasts)), "", "Power (80 %, two-sided α 0.05):", ""]
    lines += [f"- {r.name}: {r.power}" for r in a.contrasts.itertuples()]
    lines += [""]
    for series, name in names.items():
        lines += [f"![{name}]({(rel / name).as_posix()})", ""]
    return lines + mechanism_section(a)


def setting_section(a: Analysis, data: Path) -> list[str]:
    grid = load_or_create(data, None)
    subs = [(s.parent.name, load_or_create(s.parent, None)) for s in sorted(data.glob("*/sweep.json"))]
    counts = a.metrics.groupby("label").size()
    first = a.scalars.groupby("seed")[cmp.HELDOUT_INITIAL].first() if cmp.HELDOUT_INITIAL in a.scalars else None
    lines = ["## Setting", "",
             f"- grid: {', '.join(grid.algos)}; DHPO clip modes {', '.join(grid.clips) or 'default'}; seeds "
             f"{', '.join(map(str, grid.seeds))}; runs used (completed): **{len(a.metrics)}** (per label: "
             + ", ".join(f"{k} {v}" for k, v in counts.items()) + ")"]
    lines += [f"- and the sweep in `{sub}/`: {', '.join(g.algos)}; seeds {', '.join(map(str, g.seeds))}; options "
              + ("the same" if g.train_args == grid.train_args else f"`{' '.join(g.train_args)}`") for sub, g in subs]
    lines += [f"- every run: `dhpo-suite train {' '.join(grid.train_args)}` ({model_of(grid.train_args)})",
              f"- cost (runs in parallel, one torch thread each): {cost(data)}",
              "- a seed fixes the starting model, the prompts and the first rollout for every algorithm (tested in "
              "tests/science/test_sweep.py), so differences are paired over seeds",
              "- a label is the objective, its DHPO clip mode, and any `--hp` setting that differs between runs of "
              "that objective (`grpo-eps_high=0.28`: the clip-higher control)"]
    if first is not None and len(first):
        lines += ["", f"Held-out reward before training: {first.mean():.3f} on average ("
                  + ", ".join(f"seed {k}: {v:.3f}" for k, v in first.items()) + ")."]
    return lines + [""]


def write_report(data: Path, doc: Path, figures: Path, notes: Path | None = None,
                 also: list[Path] | None = None) -> str:
    """The report of kept-data folder `data` (only its files are read), written to `doc`."""
    also = also or []
    a = analyse(data, completed_only=True)
    grid = load_or_create(data, None)
    lines = [f"# Reproduction of the paper's claims at toy scale: {model_of(grid.train_args).split(',')[0]}", "",
             "Made by these commands, in this order (the last one regenerates this file, byte for byte, from the "
             f"committed data in `{data}` alone):", "", "```bash", *commands(data, doc, figures, notes, also), "```",
             ""]
    lines += [f"Also: [{p.read_text().splitlines()[0].lstrip('# ')}]({os.path.relpath(p, doc.parent)}), a report "
              "of another sweep by this script.\n" for p in also]
    if a.prereg is None:
        lines += ["## Verdicts", "", "None: this sweep has no pre-registration (`dhpo-suite sweep --prereg`), so "
                  "its tables are descriptive only.", "", "Paired differences against GRPO over shared seeds (95 % "
                  "t-intervals, unadjusted for multiplicity):", "",
                  markdown_table(cmp.paired_differences(a.metrics, "grpo")), ""]
    else:
        lines += verdict_section(a, doc, figures)
    lines += setting_section(a, data)
    lines += ["## All outcomes", "", "Per label, mean [95 % t-interval] across seeds (no interval below 3 seeds):",
              "", markdown_table(cmp.summarize(a.metrics)), "",
              "Definitions: " + "; ".join(f"**{k}**: {v}" for k, v in cmp.METRIC_DOCS.items()) + ".", ""]
    note = residual_note(a, grid.train_args)
    lines += [note, ""] if note else []
    if notes is not None:
        lines += ["## Notes", "", notes.read_text().strip(), ""]
    text = "\n".join(lines)
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sweep", type=Path, nargs="?", help="a sweep directory to export into --data first")
    ap.add_argument("--data", type=Path, help="the kept-data folder to write (with SWEEP)")
    ap.add_argument("--from-data", type=Path, help="a kept-data folder: regenerate the report from it alone")
    ap.add_argument("--doc", type=Path, default=DEFAULT_DOC)
    ap.add_argument("--figures", type=Path, default=DEFAULT_FIGURES)
    ap.add_argument("--notes", type=Path, help="Markdown quoted verbatim at the end (what the probes taught)")
    ap.add_argument("--also", type=Path, action="append", help="another report of this script to link at the top")
    a = ap.parse_args(argv)
    if (a.sweep is None) == (a.from_data is None) or (a.sweep is not None and a.data is None):
        ap.error("give SWEEP --data DATA (export, then report) or --from-data DATA (report only)")
    data = a.from_data or a.data
    if a.sweep is not None:
        kept.export(a.sweep, data)
    elif not kept.is_kept(data):
        sys.exit(f"error: --from-data: {data}: no {kept.RUNS_FILE} and {kept.SCALARS_FILE} (write them with "
                 f"`dhpo-suite compare SWEEP --export {data}`)")
    write_report(data, a.doc, a.figures, a.notes, a.also)
    print(json.dumps({"doc": str(a.doc), "data": str(data),
                      "figures": sorted(p.name for p in a.figures.glob("*.png"))}))


if __name__ == "__main__":
    main()
