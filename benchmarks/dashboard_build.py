"""What building the chart pages' figures costs the server, per figure, side by side with another version.

    .venv/bin/python benchmarks/dashboard_build.py [--steps 1000] [--repeats 7] [--against DIR]

Builds, from the two synthetic runs of benchmarks/dashboard.py, what a cold visit of a chart page builds before
Streamlit serialises it: Dynamics' smoothed frame (curves.prepare, EMA 0.6), its 7 metric panels
(curves.overlay; the eighth, accuracy, is not built here) drawn as one figure (grid.grid), the clip
fractions of both runs, and Entropy collapse's five-row figure; then the figure's JSON as st.plotly_chart makes
it; and what the Clipping page reads for one run: its heatmap's 120 steps of log-ratio histograms and its
binding summary's 40 steps of outliers (caches cleared before each). Each measure is the best of --repeats in
this process (Python only: no browser, no server). With --against DIR (a directory holding another version's
dhpo_suite: `git archive REV dhpo_suite | tar -x -C DIR`) each version builds 3 times in each of --repeats
processes, the versions alternating, and the table gives the best of each and the ratio new/old, then whether
both built the same figures (their JSON, keys sorted). benchmarks/dashboard.py measures whole pages in the browser.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PANELS = [("entropy/mean", ("entropy/p10", "entropy/p90"), ()), ("length/mean", None, (("length/p90", "p90"),)),
          ("length/truncated_frac", None, ()), ("reward/mean", None, ()),
          ("w/mean", ("w/p10", "w/p90"), (("w/p50", "p50"),)), ("kl/k3", None, (("kl/k1", "k1"),)),
          ("grad_norm", None, ())]  # the page's (dashboard/app_pages/dynamics.py)


def measure(root: Path, repeats: int) -> dict[str, float | str]:
    """Best-of-`repeats` milliseconds per build step, with the dhpo_suite importable here; "figures": a digest of
    the built figures' JSON, keys sorted (two versions that build the same figures have the same digest)."""
    import pandas as pd
    import plotly.io as pio

    from dhpo_suite.dashboard import data, frames
    from dhpo_suite.science.collapse import CollapseRule, detect_collapse
    from dhpo_suite.dashboard.figures import collapse as cfig
    from dhpo_suite.dashboard.figures import curves as fig
    from dhpo_suite.dashboard.figures import outliers as ofig
    from dhpo_suite.dashboard.figures.grid import grid
    from dhpo_suite.runs import RunReader

    raw = pd.concat([RunReader(root / r).scalars().assign(run=r) for r in ("dhpo-e", "grpo")], ignore_index=True)
    cols = list(raw.columns.drop(["run", "step"]))
    colors = fig.run_colors(["dhpo-e", "grpo"])
    why_cols = [m for _, ms in cfig.WHY_ROWS for m in ms]
    verdicts = {r: detect_collapse(g.set_index("step")["entropy/mean"], g.set_index("step")["length/mean"],
                                   CollapseRule()) for r, g in raw.groupby("run", sort=False)}
    state: dict = {}
    panel = getattr(fig, "overlay", fig.line_overlay)  # the page's: an older version validated each panel
    run = str(root / "dhpo-e")
    every = RunReader(run).steps()

    def heatmap() -> None:
        data._step_histograms.clear()
        steps = frames.sample_steps(every, 0, every[-1])
        data.histograms(run, steps, list(frames.log_ratio_names("mixed", "all")))

    def summary() -> None:
        data._outlier_tables.clear()
        steps = frames.sample_steps(every, 0, every[-1], n=frames.SUMMARY_STEPS)
        columns = getattr(ofig, "SUMMARY_COLUMNS", None)  # an older version reads every column
        ofig.binding_summary(data.outlier_tables(run, steps, *([columns] if columns else []))[0])

    def steps() -> dict:
        return {
            "prepare (EMA 0.6)": lambda: state.update(f=fig.prepare(raw, cols, 0.6), r=fig.prepare(raw, cols)),
            "7 panels (overlay)": lambda: state.update(panels=[
                panel(state["f"], m, m, band=b, extra=list(e), colors=colors, legend=False,
                      raw=state["r"], smoothing=0.6) for m, b, e in PANELS]),
            "as one figure (grid)": lambda: state.update(grid=grid(state["panels"])),
            "its JSON (st.plotly_chart)": lambda: pio.to_json(state["grid"].to_dict(), validate=False),
            "clip fractions, 2 runs": lambda: fig.clip_fractions(state["f"], ("token", "sequence", "mixed"), colors),
            "Entropy collapse's figure": lambda: cfig.why_figure(fig.prepare(raw, why_cols), verdicts, colors),
            "Clipping: heatmap's 120 histogram files": heatmap,
            "Clipping: binding summary's 40 outlier files": summary,
        }

    best: dict[str, float] = {}
    for _ in range(repeats):
        for name, step in steps().items():
            t0 = time.perf_counter()
            step()
            best[name] = min(best.get(name, float("inf")), (time.perf_counter() - t0) * 1000)
    built = [state["grid"], fig.clip_fractions(state["f"], ("token", "sequence", "mixed"), colors),
             cfig.why_figure(fig.prepare(raw, why_cols), verdicts, colors)]
    canonical = [json.dumps(json.loads(pio.to_json(f, validate=False)), sort_keys=True) for f in built]  # key order
    digest = hashlib.sha256("".join(canonical).encode()).hexdigest()[:16]
    return {**best, "figures": digest}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--against", type=Path, help="a directory holding another version's dhpo_suite package")
    ap.add_argument("--runs-dir", type=Path, help="reuse/keep generated runs here")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the --against subprocess's output
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    from dashboard import make_runs  # benchmarks/dashboard.py

    root = make_runs((args.runs_dir or Path(tempfile.mkdtemp(prefix="dash-build-"))) / f"steps-{args.steps}",
                     args.steps)
    if args.json:
        print(json.dumps(measure(root, args.repeats)))
        return
    if args.against is None:
        print(f"ms, best of {args.repeats}, {args.steps}-step runs\n\n| build | ms |\n|---|---|")
        for name, ms in measure(root, args.repeats).items():
            print(f"| {name} | {ms:.0f} |" if name != "figures" else f"\nfigures' JSON digest: {ms}")
        return
    if not (args.against / "dhpo_suite" / "dashboard" / "figures" / "curves.py").exists():
        raise SystemExit(f"--against {args.against}: no dhpo_suite/dashboard/figures/curves.py there")
    argv = [sys.executable, __file__, "--json", "--steps", str(args.steps), "--repeats", "3",
            "--runs-dir", str(root.parent)]
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for _ in range(args.repeats):  # alternating processes: both versions see the same machine load
        for name, env in (("old", {**os.environ, "PYTHONPATH": str(args.against.resolve())}), ("new", None)):
            out = subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
            runs[name].append(json.loads(out.splitlines()[-1]))
    digests = {name: {r.pop("figures") for r in rs} for name, rs in runs.items()}
    old, new = ({k: min(r[k] for r in rs) for k in rs[0]} for rs in (runs["old"], runs["new"]))
    print(f"ms, best of 3 builds in each of {args.repeats} processes per version (alternating), {args.steps}-step "
          f"runs; old: {args.against}\n")
    print("| build | old | new | new/old |\n|---|---|---|---|")
    for k in new:
        print(f"| {k} | {old[k]:.0f} | {new[k]:.0f} | {new[k] / old[k]:.2f} |")
    same = "the same" if digests["old"] == digests["new"] and len(digests["new"]) == 1 else "DIFFERENT"
    print(f"\nthe figures' JSON (Dynamics' panels, clip fractions, Entropy collapse's figure): {same} "
          f"(digests old {sorted(digests['old'])}, new {sorted(digests['new'])})")


if __name__ == "__main__":
    main()
