"""Manipulation checks: did the setting do what the claims need, before any verdict is read?

A verdict on "branch clipping beats token clipping" means nothing where no clip binds, where the collapse the
claim is about never happened, or where the arms' updates are nearly the same step. So `compare` prints, before
its verdicts (thresholds from the pre-registration's `checks`, dhpo_suite.science.prereg):

- binding: the share of GRPO's tokens (each GRPO label's) whose clip removed their gradient (mean over steps, per
  seed; the off-policy share `clip/token/binding_offpolicy` when the runs logged it, else `clip/token/binding`,
  which also counts the on-policy first mini-batch where no ratio has moved), with its t-interval; it must reach
  `min_binding`, else no contrast can be resolved. (Only GRPO's: for DHPO a "binding" token keeps the
  (1−w)·s part of its gradient, so the same flag means less.)
- collapse: per series a contrast needs (`needs_collapse`), the baseline's relative change from its first 3 steps
  to its last quarter (the same steps as late_entropy: compare.late_count), per seed, with its t-interval; it
  "occurred" when the mean fell by `collapse_fall` and the interval lies below 0.
- the trust-region leak (dhpo_suite.science.leak), per label: the share of gradient kept on the tokens whose own
  clip binds (GRPO 0 by eq. 3; DHPO branch clipping (1−w)·s/m by eqs. 11, 17), with its t-interval over seeds,
  and how often the sequence ratio left its region at all.
- the mixing weight `w` (w/mean and its quantiles w/pNN) and the share of gradient the clip kept (every `kept`
  metric), per label, when the runs logged them; "not logged" otherwise.
- update distance (update_distance.json, docs/sweep.md): per contrast, the distance between the two arms' one-step
  updates as a share of the second-rollout yardstick (mean over checkpoints); below `resolve_share` the
  contrast gets "this setting cannot resolve the claim" instead of a verdict.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from dhpo_suite.science.compare import Interval, interval, late_count
from dhpo_suite.science.leak import label_leaks
from dhpo_suite.science.prereg import Prereg

__all__ = ["UPDATE_DISTANCE_FILE", "Checks", "manipulation_checks", "relative_changes", "update_ratio"]

UPDATE_DISTANCE_FILE = "update_distance.json"
BINDING_COLUMNS = ("clip/token/binding_offpolicy", "clip/token/binding")


@dataclass
class Checks:
    """The lines to print (in order) and, per contrast name, why it cannot be resolved (absent: it can)."""

    lines: list[str] = field(default_factory=list)
    unresolvable: dict[str, str] = field(default_factory=dict)
    binding: Interval | None = None
    collapse: dict[str, tuple[Interval, bool]] = field(default_factory=dict)


def _fmt(iv: Interval, pct: bool = False) -> str:
    f = (lambda v: f"{v:+.1%}") if pct else (lambda v: f"{v:.4f}")
    if math.isnan(iv.mean):
        return "—"
    return f(iv.mean) + ("" if math.isnan(iv.lo) else f" [{f(iv.lo)}, {f(iv.hi)}]") + f" (n={iv.n})"


def relative_changes(scalars: pd.DataFrame, label: str, series: str) -> dict[int, float]:
    """Per seed of `label`: the relative change of `series` from its first 3 steps to its last quarter (the
    late_entropy window, compare.late_count)."""
    out = {}
    for seed, g in scalars[scalars["label"] == label].groupby("seed"):
        v = g.sort_values("step")[series].dropna() if series in g else pd.Series(dtype=float)
        if len(v):
            out[int(seed)] = float(v.tail(late_count(len(v))).mean() / v.head(3).mean() - 1)
    return out


def late_steps(scalars: pd.DataFrame, label: str) -> int:
    """The number of last steps relative_changes averages for `label` (its longest run's)."""
    g = scalars[scalars["label"] == label]
    return late_count(int(g.groupby("seed")["step"].count().max())) if len(g) else 0


def _per_seed_mean(scalars: pd.DataFrame, label: str, column: str) -> np.ndarray:
    g = scalars[scalars["label"] == label]
    if column not in g or g[column].isna().all():
        return np.array([])
    return g.groupby("seed")[column].mean().to_numpy()


def manipulation_checks(prereg: Prereg, scalars: pd.DataFrame, root: Path | None) -> Checks:
    """Every check of the module docstring for the pre-registered contrasts (`root`: where update_distance.json
    may be; None: not looked for)."""
    c = Checks()
    grpo = sorted({lab for k in prereg.contrasts for lab in (k.arm, k.baseline)
                   if lab == "grpo" or lab.startswith("grpo-")})
    _binding(c, prereg, scalars, grpo)
    _collapse(c, prereg, scalars)
    _leak(c, scalars)
    _telemetry(c, scalars)
    _update_distance(c, prereg, root)
    return c


def _binding(c: Checks, prereg: Prereg, scalars: pd.DataFrame, baselines: list[str]) -> None:
    need = prereg.checks["min_binding"]
    for base in baselines:
        column = next((col for col in BINDING_COLUMNS if len(_per_seed_mean(scalars, base, col))), None)
        if column is None:
            c.lines.append(f"binding: {base}: not logged")
            continue
        iv = interval(_per_seed_mean(scalars, base, column))
        ok = iv.mean >= need
        c.binding = c.binding or iv
        c.lines.append(f"binding: {base}'s clip removed the gradient of "
                       f"{_fmt(iv, pct=True).replace('+', '')} of its tokens "
                       f"(`{column}`, mean over steps per seed" + ("" if column.endswith("offpolicy") else
                                                         ", the on-policy first mini-batch included") +
                       f"); needed: at least {need:.1%} — "
                       + ("passed" if ok else "FAILED"))
        if not ok:  # plain GRPO's clip not acting: no clipping claim can be resolved in this setting
            for k in prereg.contrasts:
                if base == "grpo" or base in (k.arm, k.baseline):
                    c.unresolvable.setdefault(k.name, f"{base}'s clip binds on {iv.mean:.2%} of tokens, below the "
                                                      f"pre-registered {need:.1%}: clipping hardly acts here")


def _collapse(c: Checks, prereg: Prereg, scalars: pd.DataFrame) -> None:
    fall = prereg.checks["collapse_fall"]
    for k in prereg.contrasts:
        if not k.needs_collapse:
            continue
        key = f"{k.baseline} {k.needs_collapse}"
        if key not in c.collapse:
            iv = interval(list(relative_changes(scalars, k.baseline, k.needs_collapse).values()))
            occurred = iv.mean <= -fall and iv.hi < 0
            c.collapse[key] = (iv, occurred)
            c.lines.append(f"collapse: {k.baseline}'s {k.needs_collapse} changed by {_fmt(iv, pct=True)} from its "
                           f"first 3 steps to its last quarter ({late_steps(scalars, k.baseline)} steps, as "
                           f"late_entropy); the claim needs a fall of at least {fall:.0%} with "
                           f"the interval below 0 — " + ("occurred" if occurred else "did NOT occur"))
        iv, occurred = c.collapse[key]
        if not occurred:
            c.unresolvable.setdefault(k.name, f"the collapse the claim needs did not occur ({k.baseline}'s "
                                              f"{k.needs_collapse} changed by {iv.mean:+.1%})")


def _leak(c: Checks, scalars: pd.DataFrame) -> None:
    for x in label_leaks(scalars):
        if x.leak.n == 0:
            c.lines.append(f"trust-region leak: {x.label}: no clip bound in its runs (or not logged)")
            continue
        seq = "" if math.isnan(x.sequence_above) else (f"; its sequence ratio lay above its region on "
                                                       f"{x.sequence_above:.2%} of tokens, below on "
                                                       f"{x.sequence_below:.2%}")
        c.lines.append(f"trust-region leak: {x.label} kept {_fmt(x.leak, pct=True).replace('+', '')} of the "
                       f"gradient on the tokens whose own clip (`{x.branch}`) binds ({x.binding:.2%} of tokens; "
                       f"κ-mean over each run's binding tokens, science/leak.py){seq}")


def _telemetry(c: Checks, scalars: pd.DataFrame) -> None:
    kept = sorted(col for col in scalars.columns if "kept" in col)
    w = sorted((col for col in scalars.columns if col.startswith("w/")),
               key=lambda col: (col != "w/mean", int(col[3:]) if col[3:].isdigit() else 0, col))
    for name, cols in (("w", w), ("kept gradient share", kept)):
        if not cols:
            c.lines.append(f"{name}: not logged by these runs")
            continue
        for label, g in scalars.groupby("label", sort=True):
            values = {col: g[col].mean() for col in cols if g[col].notna().any()}
            if values:
                c.lines.append(f"{name}: {label}: " + ", ".join(f"{col} {v:.3f}" for col, v in values.items())
                               + " (mean over steps and seeds)")


def update_ratio(data: dict, arm: str, baseline: str) -> tuple[float, str]:
    """Mean over checkpoints of distance(arm's update, baseline's update) / yardstick, and how it was found."""
    ref, how, ratios = data.get("baseline", "grpo"), "measured", []
    for cp in data["checkpoints"]:
        d, pairs = cp["distance"], cp.get("pairs", {})
        if ref in (arm, baseline):
            dist = d.get(baseline if arm == ref else arm)
        elif f"{arm}|{baseline}" in pairs or f"{baseline}|{arm}" in pairs:
            dist = pairs.get(f"{arm}|{baseline}", pairs.get(f"{baseline}|{arm}"))
        else:
            dist = d[arm] + d[baseline] if arm in d and baseline in d else None
            how = f"an upper bound: distance to {ref}'s update of each, summed"
        if dist is not None and cp["yardstick"] > 0:
            ratios.append(dist / cp["yardstick"])
    return (float(np.mean(ratios)) if ratios else math.nan), how


def _update_distance(c: Checks, prereg: Prereg, root: Path | None) -> None:
    path = root / UPDATE_DISTANCE_FILE if root is not None else None
    if path is None or not path.exists():
        c.lines.append(f"update distance: not measured (no {UPDATE_DISTANCE_FILE}); the verdicts below are not "
                       "guarded by it")
        return
    data = json.loads(path.read_text())
    share = prereg.checks["resolve_share"]
    steps = ", ".join(str(cp["step"]) for cp in data["checkpoints"])
    for k in prereg.contrasts:
        ratio, how = update_ratio(data, k.arm, k.baseline)
        if math.isnan(ratio):
            c.lines.append(f"update distance: {k.name} ({k.arm} vs {k.baseline}): not in {path.name}")
            continue
        ok = ratio >= share
        c.lines.append(f"update distance: {k.name} ({k.arm} vs {k.baseline}): one-step updates {ratio:.1%} of the "
                       f"second-rollout yardstick apart ({how}; checkpoints at steps {steps}); needed: at least "
                       f"{share:.0%} — " + ("resolvable" if ok else "NOT resolvable"))
        if not ok:
            c.unresolvable.setdefault(k.name, f"the arms' one-step updates differ by {ratio:.1%} of the "
                                              f"second-rollout yardstick, below the pre-registered {share:.0%}")
