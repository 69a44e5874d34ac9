"""Which runs may be averaged together: groups of runs whose settings are equal in everything but the seed.

A comparison across seeds is only a comparison of algorithms when nothing else differs. So the group of a run
is keyed by every setting that differs between the runs compared (algorithm, clip mode, lr, ε, model, task,
group size, ..., from the manifest's hparams and resolved config), not by the algorithm name: an lr 2e-3 GRPO
run is never averaged with lr 1e-4 GRPO seeds. Two runs in one group differ only in their seed (and in
settings that do not change what is trained: output folder, threads, logging cadence, device).

A group's label starts with `dhpo-suite compare`'s own label of its runs (`science.compare.run_labels`:
the algorithm, the clip mode for DHPO, a varying `--hp` setting, a varying optimisation setting such as
`grpo · lr=0.002`), so a sweep that varies only those reads exactly as in `compare`; every other differing
setting is appended the same way (`· model=...`). Pure functions, no Streamlit.
"""

from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["NOT_SETTINGS", "run_settings", "differing", "group_labels", "setting_text", "one_apart",
           "one_apart_from", "seed_means"]

NOT_SETTINGS = frozenset({
    "seed", "out", "resume", "name", "device", "threads", "grader_workers", "logger", "checkpoint_every",
    "eval_every", "micro_batch", "chunk_tokens", "algo", "hparams", "backend", "model", "task",
})
"""Config keys that are not compared: the seed (what a group spans), where and how fast a run was computed
(same numbers), logging cadence, and keys the manifest already holds at top level (algo, hparams, ...)."""


def setting_text(value: Any) -> str:
    """A setting as compared and shown: floats in short form (2e-3 → 0.002), containers as sorted JSON."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def run_settings(manifest: Mapping[str, Any]) -> dict[str, str]:
    """Every setting of a run (a manifest as a dict): algorithm, model, task, backend, the objective and
    optimiser hparams, and the resolved config's other keys (hparams win where both name a key; config
    values that are None are unresolved defaults the hparams already carry)."""
    config = manifest.get("config") or {}
    # The model the user chose (the embedded trainer's `--model`), not the manifest's resolved directory: the
    # tiny model's warm start is one cache entry per seed, which is no setting.
    model = config.get("model") if isinstance(config.get("model"), str) else manifest.get("model", "")
    out = {"algorithm": str(manifest.get("algorithm", "")), "model": setting_text(model),
           "task": setting_text(manifest.get("task", "")), "backend": setting_text(manifest.get("backend", ""))}
    hparams = manifest.get("hparams") or {}
    out.update({k: setting_text(v) for k, v in hparams.items()})
    out.update({k: setting_text(v) for k, v in config.items()
                if k not in NOT_SETTINGS and k not in hparams and v is not None})
    return out


def differing(settings: Mapping[str, Mapping[str, str]]) -> list[str]:
    """The settings whose value is not the same for every run (a key missing from a run counts as "—"),
    algorithm first, then in name order."""
    keys = sorted({k for s in settings.values() for k in s})
    diff = [k for k in keys if len({s.get(k, "—") for s in settings.values()}) > 1]
    return sorted(diff, key=lambda k: (k != "algorithm", k))


def group_labels(settings: Mapping[str, Mapping[str, str]], base: Mapping[str, str]) -> dict[str, str]:
    """{run: group label}: `base[run]` (compare's label: algorithm and DHPO clip mode) followed by every other
    setting that differs, e.g. "grpo · lr=0.002": those every run has and that differ across all runs (lr,
    model, ...) and those that differ among the runs of the same base label (a setting only DHPO has, between
    two DHPO runs). Runs with the same label have the same settings except the seed."""
    shared = set.intersection(*(set(s) for s in settings.values())) if settings else set()
    everywhere = {k for k in differing(settings) if k in shared}
    labels = {}
    for b in sorted(set(base.values())):
        mine = {r: s for r, s in settings.items() if base[r] == b}
        extra = sorted((everywhere | set(differing(mine))) - {"algorithm", "clip"})
        for run, s in mine.items():
            named = [k for k in extra if f"{k}=" not in b]  # compare's label may name a --hp setting already
            labels[run] = " · ".join([b, *(f"{k}={s.get(k, '—')}" for k in named)])
    return labels


def one_apart(a: Mapping[str, str], b: Mapping[str, str]) -> str | None:
    """The one setting in which two groups' settings differ, or None when they differ in none or in more
    than one (a paired difference then measures several changes at once, and names none of them). A
    setting only one group has belongs to its algorithm (DHPO's clip mode and mixing) and is counted with
    the algorithm, not on its own: DHPO-E against GRPO at the same lr differ in the algorithm alone."""
    changed = [k for k in sorted(set(a) & set(b)) if a[k] != b[k]]
    return changed[0] if len(changed) == 1 else None


def one_apart_from(baseline: str, settings: Mapping[str, Mapping[str, str]],
                   labels: Mapping[str, str]) -> dict[str, str]:
    """{group label: the one setting it changes} of the groups one setting apart from group `baseline`, from
    the runs' settings and their group labels (runs of a group share every setting but the seed)."""
    of_group = {labels[r]: s for r, s in settings.items()}
    if baseline not in of_group:
        return {}
    apart = {g: one_apart(of_group[baseline], s) for g, s in of_group.items() if g != baseline}
    return {g: k for g, k in sorted(apart.items()) if k is not None}


def seed_means(frame: pd.DataFrame, labels: Mapping[str, str], columns: Sequence[str]) -> pd.DataFrame:
    """Runs averaged per group: one row per (group, step) with `run` = the group label, each column's mean
    over the group's runs that logged it at that step, its 95 % t-interval (`<column> lo`, `<column> hi`; NaN
    with one run) and `<column> n`; `x` (when present) averaged the same way. `frame`: long, one row per
    (run, step); runs missing from `labels` are left out."""
    cols = [c for c in columns if c in frame.columns and c not in ("run", "step", "x")]
    f = frame.assign(run=frame["run"].map(labels)).dropna(subset=["run"])
    g = f.groupby(["run", "step"], sort=True)
    keep = cols + (["x"] if "x" in f.columns else [])
    mean, sd, n = g[keep].mean(), g[cols].std(ddof=1), g[cols].count()
    half = sd * stats.t.ppf(0.975, (n - 1).where(n > 1)) / np.sqrt(n)
    out = pd.concat([mean, (mean[cols] - half).add_suffix(" lo"), (mean[cols] + half).add_suffix(" hi"),
                     n.add_suffix(" n")], axis=1)
    return out.reset_index()
