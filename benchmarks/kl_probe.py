"""Which learning rate matches an arm's KL per step to the baseline's? The KL probe of a registration (issue 46).

Reads `metrics.csv` of `dhpo-suite compare SWEEP --export DIR` (one row per run: label, seed, mean_kl) and prints,
for every label of the arm's objective, its mean KL per step over seeds divided by the baseline's, whether that
ratio lies in the registered band, and, from the two learning rates whose ratios bracket 1 (else the two nearest),
the lr a power law KL ∝ lr^p through them puts at ratio 1:

    .venv/bin/python benchmarks/kl_probe.py docs/reproduction/data/probe46 --arm dhpo-e-branch --baseline grpo
    ... --fit 5e-5,1e-4      # the power law through these two lrs only (what was known before 6e-5 was probed)

The mechanism sweep's registration (docs/reproduction/prereg-issue46-mechanism.json) named lr 5e-5; this prints
0.735 for it; `--fit 5e-5,1e-4` puts ratio 1 at 5.97e-5 (p 1.74), whence 6e-5, probed next: 1.158, in the band,
the superseding registration's lr (docs/reproduction.md, "Registered").
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

import pandas as pd

LR = re.compile(r"lr=([0-9.eE+-]+)$")


def ratios(metrics: pd.DataFrame, arm: str, baseline: str) -> dict[float, float]:
    """{lr: mean KL of the arm's label with that lr / the baseline's mean KL} (means over the labels' seeds)."""
    reference = metrics.loc[metrics.label == baseline, "mean_kl"].mean()
    out = {}
    for label, rows in metrics[metrics.label.str.startswith(f"{arm} · lr=")].groupby("label"):
        out[float(LR.search(label).group(1))] = rows.mean_kl.mean() / reference
    return dict(sorted(out.items()))


def power_law_lr(points: dict[float, float], target: float = 1.0) -> tuple[float, float]:
    """(p, lr) of KL ratio = c·lr^p through the two lrs nearest the target ratio (in log distance)."""
    (a, ra), (b, rb) = sorted(points.items(), key=lambda kv: abs(math.log(kv[1] / target)))[:2]
    p = math.log(ra / rb) / math.log(a / b)
    return p, a * (target / ra) ** (1 / p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("export", type=Path, help="a `compare --export` directory (its metrics.csv)")
    parser.add_argument("--arm", required=True, help="the arm's label without its ` · lr=` part")
    parser.add_argument("--baseline", required=True, help="the baseline's label")
    parser.add_argument("--band", default="0.8,1.25", help="the registered band of the ratio")
    parser.add_argument("--fit", help="comma-separated lrs to fit the power law through (default: the two nearest)")
    args = parser.parse_args()
    low, high = (float(x) for x in args.band.split(","))
    points = ratios(pd.read_csv(args.export / "metrics.csv"), args.arm, args.baseline)
    for lr, r in points.items():
        print(f"{args.arm} lr={lr:g}: KL per step {r:.3f}× {args.baseline}'s ({'in' if low <= r <= high else 'outside'}"
              f" [{low:g}, {high:g}])")
    fit = {lr: r for lr, r in points.items() if not args.fit or any(math.isclose(lr, float(x))
                                                                      for x in args.fit.split(","))}
    if len(fit) >= 2:
        p, lr = power_law_lr(fit)
        through = " and ".join(f"{x:g}" for x in sorted(fit)) if args.fit else "the two nearest"
        print(f"power law through lr {through}: KL ∝ lr^{p:.2f}; ratio 1 at lr {lr:.3g}")


if __name__ == "__main__":
    main()
