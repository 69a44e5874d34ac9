"""The pre-registered contrasts of a sweep, tested: per contrast, over the seeds both labels share, the paired
t-interval and p, the exact sign-flip p, TOST for declared equalities, P(improvement), the power line; Holm across
the declared family; and the verdict the pre-registration's rule gives (dhpo_suite.science.prereg), unless a
manipulation check (dhpo_suite.science.checks) says the setting cannot resolve the claim.

Verdict rule, per family contrast (α from the pre-registration):
    greater / less   "reproduced" when the Holm-adjusted t-test p < α and the mean lies on the claimed side;
                     "not reproduced" when p < α on the other side; otherwise "inconclusive"
    equal            "equal within ±margin" when the Holm-adjusted TOST p < α; otherwise "not shown equal"
Contrasts outside the family are exploratory: printed with their numbers, no verdict.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dhpo_suite.science import stats
from dhpo_suite.science.prereg import Contrast, Prereg

__all__ = ["evaluate", "power_line", "verdict"]


def paired_values(metrics: pd.DataFrame, k: Contrast) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(shared seeds, arm values, baseline values) of contrast `k`; repeats of a (label, seed) averaged."""
    per_seed = metrics.groupby(["label", "seed"])[k.metric].mean()
    labels = per_seed.index.get_level_values(0)
    arm, base = (per_seed.xs(lab, level="label") if lab in labels else pd.Series(dtype=float)
                 for lab in (k.arm, k.baseline))
    shared = sorted(set(arm.dropna().index) & set(base.dropna().index))
    return [int(s) for s in shared], arm.loc[shared].to_numpy(), base.loc[shared].to_numpy()


def evaluate(prereg: Prereg, metrics: pd.DataFrame, unresolvable: dict[str, str] | None = None,
             refused: str | None = None) -> pd.DataFrame:
    """One row per pre-registered contrast: its numbers, Holm-adjusted p over the family, and its verdict
    (`refused`: why the grid gets no verdict at all, dhpo_suite.science.grid)."""
    rows = []
    for k in prereg.contrasts:
        seeds, a, b = paired_values(metrics, k)
        t = stats.paired_test(a - b)
        rows.append({"name": k.name, "claim": k.claim, "arm": k.arm, "baseline": k.baseline, "metric": k.metric,
                     "direction": k.direction, "margin": k.margin, "family": k.name in prereg.family,
                     "seeds": seeds, "n": t.n, "mean": t.mean, "sd": t.sd, "lo": t.lo, "hi": t.hi, "p": t.p,
                     "p_sign_flip": t.p_sign_flip,
                     "p_tost": stats.tost(a - b, k.margin) if k.direction == "equal" else math.nan,
                     "p_improvement": stats.prob_improvement(a, b) if k.direction != "less" else
                     stats.prob_improvement(-a, -b), "why": t.why})
    table = pd.DataFrame(rows)
    tested = np.where(table["direction"] == "equal", table["p_tost"], table["p"])
    table["p_holm"] = stats.holm(np.where(table["family"], tested, np.nan))
    table["verdict"] = [verdict(r, prereg.alpha, (unresolvable or {}).get(r["name"]), refused)
                        for r in table.to_dict("records")]
    table["power"] = [power_line(r) for r in table.to_dict("records")]
    return table


def verdict(r: dict, alpha: float, unresolvable: str | None = None, refused: str | None = None) -> str:
    """The verdict of one evaluated contrast (row of evaluate), by the rule of the module docstring."""
    if not r["family"]:
        return "exploratory (not in the pre-registered family): no verdict"
    if refused:
        return f"no verdict: {refused}"
    if unresolvable:
        return f"this setting cannot resolve the claim: {unresolvable}"
    if r["n"] < stats.MIN_SEEDS:
        return f"no verdict: {r['n']} shared seeds, {stats.WHY_MIN_SEEDS}"
    p = r["p_holm"]
    if r["direction"] == "equal":
        if p < alpha:
            return f"equal within ±{r['margin']:g} (TOST, Holm p = {p:.3g})"
        return f"not shown equal within ±{r['margin']:g} (TOST, Holm p = {p:.3g})"
    sign = 1 if r["direction"] == "greater" else -1
    if p < alpha:
        return f"reproduced (Holm p = {p:.3g})" if sign * r["mean"] > 0 else \
            f"not reproduced: the other side (Holm p = {p:.3g})"
    return f"inconclusive (Holm p = {p:.3g}, not below {alpha:g})"


def power_line(r: dict) -> str:
    """"with this paired sd, N seeds detect a difference of X at 80 %" (and the seeds the observed mean needs)."""
    sd, n = r["sd"], r["n"]
    if n < 2 or not sd > 0:
        return f"{n} seeds: no paired sd to plan from" if n < 2 else "every seed gave the same difference"
    x = stats.detectable(sd, n)
    if r["direction"] == "equal":
        return f"with this paired sd ({sd:.3g}), {n} seeds detect a difference of {x:.3g} at 80 % (two-sided α " \
               f"0.05); the equivalence margin is ±{r['margin']:g}"
    need = stats.seeds_needed(r["mean"], sd)
    more = f"; the observed {r['mean']:+.3g} would need {need} seeds" if need else \
        "; the observed mean would need more than 1000 seeds"
    return f"with this paired sd ({sd:.3g}), {n} seeds detect a difference of {x:.3g} at 80 % (two-sided α 0.05){more}"
