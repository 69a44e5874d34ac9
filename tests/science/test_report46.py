"""Issue 46's report pieces: the glance list states the regime and whether any arm learned, an entropy contrast
registered without the collapse gate says what it measures, the mechanism table puts the leak beside KL per
step, update size and accuracy, "the last quarter" is one window for late_entropy and the collapse check, and the
registrations' digests quoted in the report are the committed files'."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pandas as pd
import pytest

from dhpo_suite.science import checks as chk
from dhpo_suite.science import compare as cmp
from dhpo_suite.science import kept
from dhpo_suite.science.mechanism import mechanism_rows, monotone

ROOT = Path(__file__).parents[2]
CHAIN = ROOT / "docs" / "reproduction" / "data" / "chain"
REPORT = (ROOT / "docs" / "reproduction.md").read_text()


def test_the_glance_list_states_the_regime_and_that_no_arm_learned():
    glance = REPORT[REPORT.index("## Verdicts at a glance"):REPORT.index("## Manipulation checks")]
    assert "4 PPO epochs × 4 mini-batches = **16 optimizer steps per rollout** (15 of them off-policy)" in glance
    assert "the paper's Appendix D has 2" in glance
    # GRPO from 0.234 to 0.214 on average (the committed metrics.csv and runs' step-0 evaluations)
    assert "grpo -0.020 [" in glance and "(3/8 seeds up)" in glance and "**no arm learned**" in glance
    line = next(ln for ln in glance.splitlines() if ln.startswith("- **entropy-vs-clip-higher**"))
    assert "registered without the collapse gate" in line and "not a collapse avoided" in line
    assert "dhpo-e-branch's own entropy/mean changed by +20% [+9%, +31%]" in line


def test_mechanism_rows_from_the_committed_data():
    metrics, scalars, _ = kept.load(CHAIN)
    rows = {r.label: r for r in mechanism_rows(CHAIN, metrics, scalars)}
    # the numbers, recomputed: KL per step 0.0037 / 0.0061 / 0.0113 / 0.0154, final 0.214 / ... / 0.091
    assert [round(rows[k].kl.mean, 4) for k in ("grpo", "dhpo-e-unified", "dhpo-e-branch", "dhpo-a-branch")] == \
        [0.0037, 0.0061, 0.0113, 0.0154]
    assert round(rows["dhpo-a-branch"].final.mean, 3) == 0.091
    first = scalars.groupby("run")[cmp.HELDOUT_INITIAL].first()
    grpo = metrics[metrics["label"] == "grpo"].set_index("run")
    assert rows["grpo"].change.mean == pytest.approx((grpo["final_reward"] - first[grpo.index]).mean())
    assert rows["grpo"].update[1] == 1.0 and 1.6 < rows["dhpo-e-branch"].update[1] < 3.2
    assert "## Mechanism: a leaky trust region" in REPORT and "KL per step rises" in REPORT


def test_monotone():
    assert monotone([0.0, 0.1, 0.3]) == "rises" and monotone([3, 2, 1]) == "falls"
    assert monotone([1, 3, 2]) == "does not move monotonically" and "not measured" in monotone([1, float("nan")])
    assert monotone([0.00080, 0.00082]) == "stays within 5 %"  # two KLs that print alike are no order


def test_last_quarter_is_one_window_for_late_entropy_and_the_collapse_check():
    # 30 steps: entropy 1 for steps 1-22, 0 for steps 23-30. The last quarter is round(7.5) = 8 steps (23-30)
    # for both: late_entropy 0 and the relative change -100 %; a 7-step window would agree, so step 23 is 0.5
    # and the window's mean says which: 8 steps give (0.5 + 0) / 8, 7 steps give 0.
    steps = range(1, 31)
    frame = pd.DataFrame({"step": steps, "entropy/mean": [1.0 if s < 23 else 0.5 if s == 23 else 0.0 for s in steps]})
    assert cmp.late_count(30) == 8
    assert cmp.run_metrics(frame)["late_entropy"] == pytest.approx(0.5 / 8)
    stacked = frame.assign(label="grpo", seed=0, run="grpo-s0")
    assert chk.relative_changes(stacked, "grpo", "entropy/mean") == {0: pytest.approx(0.5 / 8 - 1)}


def test_the_registrations_quoted_in_the_report_are_the_committed_files():
    quoted = re.findall(r"`(docs/reproduction/prereg-issue46-[a-z0-9-]+\.json)`, sha256\s+`([0-9a-f]{64})`", REPORT)
    assert len(quoted) == 3  # the mechanism sweep's, its superseding one (the KL-matched lr), the paper regime's
    for path, sha in quoted:
        assert hashlib.sha256((ROOT / path).read_bytes()).hexdigest() == sha, path
    # one section holds the registrations; its heading says how far they have run, so only its start is fixed
    assert len(re.findall(r"^### Registered\b", REPORT, flags=re.M)) == 1
