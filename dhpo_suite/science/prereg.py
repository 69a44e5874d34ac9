"""The pre-registration of a sweep (`prereg.json`): what will be tested, decided before any run exists.

`dhpo-suite sweep OUT --prereg FILE` validates FILE, copies its bytes to OUT/prereg.json and records their
sha256 in OUT/sweep.json before the first run starts; `dhpo-suite compare` takes its verdicts from that file only,
and refuses (one line naming the file) when the file's digest no longer matches the one recorded: a contrast, a
margin or the family cannot be changed after the outcomes are seen. Format (version 1, docs/sweep.md):

    {"version": 1,
     "primary_metric": "final_reward",           a compare metric; a contrast without "metric" uses it
     "alpha": 0.05,                              family-wise error rate (Holm over "family")
     "contrasts": [{"name": "entropy", "claim": "DHPO-E keeps entropy higher late",
                    "arm": "dhpo-e-branch", "baseline": "grpo", "metric": "late_entropy",
                    "direction": "greater" | "less" | "equal", "margin": 0.01 (required for "equal"),
                    "needs_collapse": "entropy/mean" (optional: the baseline's series must fall)}],
     "family": ["entropy", ...],                 the contrasts that get verdicts; the others are exploratory
     "checks": {"min_binding": 0.01, "resolve_share": 0.25, "collapse_fall": 0.2},
     "grid": "refuse" | "exclude"}               (optional, default "refuse") what a grid that is not the registered
                                                 one gets: no verdict, or its runs at fault left out, said so
                                                 (dhpo_suite.science.grid)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from dhpo_suite.science.grid import GRID_POLICIES

__all__ = ["CHECK_DEFAULTS", "PREREG_FILE", "Contrast", "Prereg", "PreregError", "digest", "load", "parse",
           "registered"]

PREREG_FILE = "prereg.json"
DIRECTIONS = ("greater", "less", "equal")
CHECK_DEFAULTS = {"min_binding": 0.01, "resolve_share": 0.25, "collapse_fall": 0.2}
"""min_binding: GRPO's clip must bind on at least this share of tokens; resolve_share: an arm's one-step update
must differ from the baseline's by at least this share of the second-rollout yardstick; collapse_fall: the
baseline's series must fall by at least this share (first 3 steps to the last quarter)."""


class PreregError(ValueError):
    """A bad or changed pre-registration file (one line naming the file and the field)."""


@dataclass(frozen=True)
class Contrast:
    """One pre-registered comparison: arm − baseline per shared seed, on one metric, in one direction."""

    name: str
    arm: str
    baseline: str
    metric: str
    direction: str
    margin: float | None = None
    claim: str = ""
    needs_collapse: str | None = None


@dataclass(frozen=True)
class Prereg:
    primary_metric: str
    alpha: float
    contrasts: tuple[Contrast, ...]
    family: tuple[str, ...]
    checks: dict
    sha256: str = ""
    grid: str = "refuse"


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parse(data: bytes, where: str, metrics: tuple[str, ...]) -> Prereg:
    """The pre-registration in `data` (the bytes of file `where`), checked field by field against compare's
    `metrics`; PreregError names the file and the field."""
    try:
        d = json.loads(data)
    except json.JSONDecodeError as e:
        raise PreregError(f"{where}: not JSON ({e})") from None
    if not isinstance(d, dict) or d.get("version") != 1:
        raise PreregError(f"{where}: version: expected 1")
    primary = d.get("primary_metric")
    if primary not in metrics:
        raise PreregError(f"{where}: primary_metric: {primary!r} is not one of {', '.join(metrics)}")
    alpha = d.get("alpha", 0.05)
    if not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise PreregError(f"{where}: alpha: must lie in (0, 1), got {alpha!r}")
    if not isinstance(d.get("contrasts"), list) or not d["contrasts"]:
        raise PreregError(f"{where}: contrasts: a non-empty list is needed")
    contrasts = tuple(_contrast(c, i, where, primary, metrics) for i, c in enumerate(d["contrasts"]))
    names = [c.name for c in contrasts]
    if len(set(names)) != len(names):
        raise PreregError(f"{where}: contrasts: names must be distinct, got {names}")
    family = d.get("family", names)
    unknown = [f for f in family if f not in names] if isinstance(family, list) else [family]
    if unknown:
        raise PreregError(f"{where}: family: {unknown[0]!r} is not a contrast name")
    checks = {**CHECK_DEFAULTS, **d.get("checks", {})}
    bad = [k for k in checks if k not in CHECK_DEFAULTS or not isinstance(checks[k], (int, float))]
    if bad:
        raise PreregError(f"{where}: checks.{bad[0]}: unknown or not a number (known: {', '.join(CHECK_DEFAULTS)})")
    grid = d.get("grid", "refuse")
    if grid not in GRID_POLICIES:
        raise PreregError(f"{where}: grid: {grid!r} is not one of {', '.join(GRID_POLICIES)}")
    return Prereg(primary, float(alpha), contrasts, tuple(family), checks, digest(data), grid)


def _contrast(c: dict, i: int, where: str, primary: str, metrics: tuple[str, ...]) -> Contrast:
    field = f"{where}: contrasts[{i}]"
    if not isinstance(c, dict):
        raise PreregError(f"{field}: expected an object")
    for key in ("name", "arm", "baseline", "direction"):
        if not isinstance(c.get(key), str) or not c[key]:
            raise PreregError(f"{field}.{key}: a non-empty string is needed")
    metric = c.get("metric", primary)
    if metric not in metrics:
        raise PreregError(f"{field}.metric: {metric!r} is not one of {', '.join(metrics)}")
    if c["direction"] not in DIRECTIONS:
        raise PreregError(f"{field}.direction: {c['direction']!r} is not one of {', '.join(DIRECTIONS)}")
    margin = c.get("margin")
    if c["direction"] == "equal" and not (isinstance(margin, (int, float)) and margin > 0):
        raise PreregError(f"{field}.margin: an 'equal' contrast needs a margin > 0 (the TOST bound)")
    extra = set(c) - {"name", "arm", "baseline", "metric", "direction", "margin", "claim", "needs_collapse"}
    if extra:
        raise PreregError(f"{field}: unknown field {sorted(extra)[0]!r}")
    return Contrast(c["name"], c["arm"], c["baseline"], metric, c["direction"],
                    float(margin) if margin is not None else None, str(c.get("claim", "")), c.get("needs_collapse"))


def registered(root: Path) -> str | None:
    """The prereg digest recorded in root/sweep.json (None when there is none)."""
    path = root / "sweep.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text()).get("prereg_sha256")
    except json.JSONDecodeError as e:
        raise PreregError(f"{path}: not JSON ({e})") from None


def load(root: Path, metrics: tuple[str, ...]) -> Prereg | None:
    """root/prereg.json, checked against the digest sweep.json recorded before the runs; None when there is no
    pre-registration. PreregError when the file was changed, or added, after the sweep started."""
    path = root / PREREG_FILE
    recorded = registered(root)
    if not path.exists():
        if recorded:
            raise PreregError(f"{path}: missing, but sweep.json registered one (sha256 {recorded[:12]}…)")
        return None
    data = path.read_bytes()
    if recorded is None:
        raise PreregError(f"{path}: not registered in {root / 'sweep.json'} (pre-register with `dhpo-suite sweep "
                          f"OUT --prereg FILE` before the runs); no verdicts from a file written afterwards")
    if digest(data) != recorded:
        raise PreregError(f"{path}: changed after the sweep started (sha256 {digest(data)[:12]}…, registered "
                          f"{recorded[:12]}…); verdicts come only from the registered file")
    return parse(data, str(path), metrics)
