"""`dhpo-suite compare` with a pre-registration, on run directories whose numbers the test chooses: the contrasts'
p-values are scipy's (ttest_rel, TOST as two ttest_1samp), Holm is worked by hand over the declared family, the
manipulation checks come before the verdicts, a small update distance turns a verdict into "this setting cannot
resolve the claim", and a pre-registration changed (or added) after the sweep started is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps

from dhpo_suite.science import prereg as pr
from dhpo_suite.science.analysis import analyse
from dhpo_suite.train.sweep import Sweep, load_or_create
from tests.science.test_compare import flat, write_run

SEEDS = range(6)
GRPO_FINAL = [0.30, 0.34, 0.28, 0.35, 0.31, 0.33]
DHPO_DELTA = [0.02, 0.05, 0.01, 0.04, 0.03, 0.02]  # dhpo-e-branch final = grpo + delta
CH_DELTA = [0.03, -0.01, 0.04, 0.00, 0.05, -0.02]   # grpo eps_high 0.28 final = grpo + delta
UNIFIED_DELTA = [0.004, -0.003, 0.002, 0.001, -0.002, 0.000]  # dhpo-e-unified final = dhpo-e-branch + delta
PREREG = {
    "version": 1, "primary_metric": "final_reward", "alpha": 0.05,
    "contrasts": [
        {"name": "accuracy", "arm": "dhpo-e-branch", "baseline": "grpo", "direction": "greater"},
        {"name": "vs-clip-higher", "arm": "dhpo-e-branch", "baseline": "grpo-eps_high=0.28", "direction": "greater"},
        {"name": "clip-equal", "arm": "dhpo-e-branch", "baseline": "dhpo-e-unified", "direction": "equal",
         "margin": 0.01},
        {"name": "entropy", "arm": "dhpo-e-branch", "baseline": "grpo", "metric": "late_entropy",
         "direction": "greater", "needs_collapse": "entropy/mean"},
        {"name": "side", "arm": "dhpo-e-unified", "baseline": "grpo", "direction": "greater"}],
    "family": ["accuracy", "vs-clip-higher", "clip-equal", "entropy"],
    "checks": {"min_binding": 0.01, "resolve_share": 0.25},
}


def binding(v):
    return lambda step: {"clip/token/binding": v, "w/mean": 0.4, "w/p50": 0.35}


def make_sweep(root, prereg: dict = PREREG):
    data = json.dumps(prereg).encode()
    load_or_create(root, Sweep(("grpo", "dhpo-e"), ("branch", "unified"), tuple(SEEDS), (), 40, pr.digest(data)), data)
    load_or_create(root / "ch", Sweep(("grpo",), (), tuple(SEEDS), ("--hp", "eps_high=0.28"), 40))  # a sub-sweep
    for seed in SEEDS:
        g = GRPO_FINAL[seed]
        write_run(root / f"grpo-s{seed}", "grpo", seed, {0: 0.2, 40: g}, lambda s: 1.0 if s < 20 else 0.9,
                  flat(20.0), extra=binding(0.02), hparams={"eps_high": 0.2})
        write_run(root / "ch" / f"grpo-s{seed}", "grpo", seed, {0: 0.2, 40: g + CH_DELTA[seed]}, flat(1.0),
                  flat(20.0), extra=binding(0.03), hparams={"eps_high": 0.28}, given={"eps_high": 0.28})
        d = g + DHPO_DELTA[seed]
        write_run(root / f"dhpo-e-branch-s{seed}", "dhpo-e", seed, {0: 0.2, 40: d}, flat(1.0 + 0.01 * seed),
                  flat(20.0), clip="branch", extra=binding(0.01))
        write_run(root / f"dhpo-e-unified-s{seed}", "dhpo-e", seed, {0: 0.2, 40: d + UNIFIED_DELTA[seed]},
                  flat(1.0), flat(20.0), clip="unified", extra=binding(0.0))
    return root


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    return make_sweep(tmp_path_factory.mktemp("prereg"))


def test_contrasts_are_scipys_tests_with_holm_over_the_family(sweep):
    a = analyse(sweep)
    t = a.contrasts.set_index("name")
    assert sorted(a.metrics["label"].unique()) == ["dhpo-e-branch", "dhpo-e-unified", "grpo", "grpo-eps_high=0.28"]
    grpo, dhpo = np.array(GRPO_FINAL), np.array(GRPO_FINAL) + DHPO_DELTA
    p_acc = sps.ttest_rel(dhpo, grpo).pvalue
    p_ch = sps.ttest_rel(dhpo, grpo + CH_DELTA).pvalue
    diff = -np.array(UNIFIED_DELTA)  # branch − unified
    p_eq = max(sps.ttest_1samp(diff, -0.01, alternative="greater").pvalue,
               sps.ttest_1samp(diff, 0.01, alternative="less").pvalue)
    assert t.loc["accuracy", "p"] == pytest.approx(p_acc, rel=1e-6)
    assert t.loc["vs-clip-higher", "p"] == pytest.approx(p_ch, rel=1e-6)
    assert t.loc["clip-equal", "p_tost"] == pytest.approx(p_eq, rel=1e-6)
    # Holm by hand over the 4 family p-values: sort, multiply by m, m-1, ..., 1, running max (Holm 1979).
    family = {"accuracy": p_acc, "vs-clip-higher": p_ch, "clip-equal": p_eq, "entropy": t.loc["entropy", "p"]}
    order = sorted(family, key=family.get)
    running, expected = 0.0, {}
    for i, name in enumerate(order):
        running = max(running, min(1.0, (len(order) - i) * family[name]))
        expected[name] = running
    for name, value in expected.items():
        assert t.loc[name, "p_holm"] == pytest.approx(value, rel=1e-9), name
    assert np.isnan(t.loc["side", "p_holm"]) and t.loc["side", "verdict"].startswith("exploratory")
    assert t.loc["accuracy", "verdict"].startswith("reproduced")  # +0.028 at every seed
    assert t.loc["vs-clip-higher", "verdict"].startswith("inconclusive")
    assert t.loc["clip-equal", "verdict"].startswith("equal within ±0.01")
    # GRPO's entropy fell 10 % (1.0 -> 0.9): short of the 20 % the claim needs, so no verdict either way.
    assert t.loc["entropy", "verdict"] == ("this setting cannot resolve the claim: the collapse the claim needs did "
                                           "not occur (grpo's entropy/mean changed by -10.0%)")
    assert "P(" not in t.loc["accuracy", "power"] and "seeds detect a difference of" in t.loc["accuracy", "power"]


def test_small_update_distance_means_the_setting_cannot_resolve(tmp_path):
    root = make_sweep(tmp_path / "s")
    (root / "update_distance.json").write_text(json.dumps({"version": 1, "baseline": "grpo", "checkpoints": [
        {"run": "grpo-s0", "step": 20, "yardstick": 0.1, "distance": {"dhpo-e-branch": 0.005, "dhpo-e-unified": 0.004,
                                                                        "grpo-eps_high=0.28": 0.05}}]}))
    t = analyse(root).contrasts.set_index("name")
    assert t.loc["accuracy", "verdict"].startswith("this setting cannot resolve the claim: the arms' one-step updates "
                                                   "differ by 5.0% of the second-rollout yardstick")
    # dhpo-e-branch vs the clip-higher control: bounded by 0.005 + 0.05 = 55 % of the yardstick: resolvable.
    assert t.loc["vs-clip-higher", "verdict"].startswith("inconclusive")
    assert t.loc["clip-equal", "verdict"].startswith("this setting cannot resolve")  # 0.009 / 0.1 at most
    # The probe's measured distance between two non-baseline arms (`pairs`) is used instead of the bound.
    data = json.loads((root / "update_distance.json").read_text())
    data["checkpoints"][0]["pairs"] = {"dhpo-e-branch|dhpo-e-unified": 0.03}
    (root / "update_distance.json").write_text(json.dumps(data))
    checks = analyse(root).checks
    assert "clip-equal" not in checks.unresolvable and "accuracy" in checks.unresolvable
    assert any("clip-equal (dhpo-e-branch vs dhpo-e-unified): one-step updates 30.0% of the second-rollout "
               "yardstick apart (measured;" in line for line in checks.lines)


def test_compare_prints_checks_before_verdicts_and_refuses_a_changed_prereg(sweep, tmp_path):
    env = {**os.environ, "COLUMNS": "250"}
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(sweep), "--export",
                          str(tmp_path / "data")], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.index("Manipulation checks") < text.index("Pre-registered contrasts") < text.index("Verdicts")
    assert "grpo's clip removed the gradient of 2.0%" in text and "passed" in text
    assert "update distance: not measured" in text and "w: grpo: w/mean 0.400" in text
    assert "kept gradient share: not logged" in text
    assert "- accuracy: reproduced (Holm p = " in text
    # The kept data reproduce the same analysis without the run directories.
    kept = analyse(tmp_path / "data")
    assert kept.contrasts.drop(columns=["seeds"]).equals(analyse(sweep).contrasts.drop(columns=["seeds"]))
    from_data = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(tmp_path / "data")],
                               capture_output=True, text=True, timeout=120, env=env)
    assert from_data.returncode == 0, from_data.stderr
    verdicts = text[text.index("Verdicts"):text.index("kept data:")]
    assert from_data.stdout[from_data.stdout.index("Verdicts"):] == verdicts
    # A pre-registration edited after the sweep started is refused, in one line naming the file.
    changed = tmp_path / "changed"
    make_sweep(changed)
    (changed / "prereg.json").write_text(json.dumps({**PREREG, "alpha": 0.1}))
    bad = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "compare", str(changed)], capture_output=True,
                         text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert f"{changed / 'prereg.json'}: changed after the sweep started" in bad.stderr


def test_a_prereg_not_registered_before_the_runs_is_refused(tmp_path):
    root = tmp_path / "late"
    write_run(root / "grpo-s0", "grpo", 0, {0: 0.2, 40: 0.3}, flat(1.0), flat(20.0))
    (root / "prereg.json").write_text(json.dumps(PREREG))
    with pytest.raises(pr.PreregError, match="not registered in"):
        analyse(root)


@pytest.mark.parametrize("edit, message", [
    ({"primary_metric": "oscillation"}, "primary_metric: 'oscillation' is not one of"),
    ({"family": ["nope"]}, "family: 'nope' is not a contrast name"),
    ({"contrasts": [{"name": "x", "arm": "a", "baseline": "b", "direction": "equal"}]}, "contrasts[0].margin"),
    ({"contrasts": [{"name": "x", "arm": "a", "baseline": "b", "direction": "up"}]}, "contrasts[0].direction"),
    ({"checks": {"min_bind": 0.1}}, "checks.min_bind"),
])
def test_prereg_fields_are_checked_one_line_each(edit, message):
    bad = {**PREREG, **edit}
    if "contrasts" in edit:
        bad["family"] = ["x"]
    with pytest.raises(pr.PreregError, match=message.replace("[", r"\[").replace("]", r"\]")):
        pr.parse(json.dumps(bad).encode(), "p.json", ("final_reward", "late_entropy"))


def test_fewer_than_three_shared_seeds_give_no_verdict_and_say_why(tmp_path):
    root = tmp_path / "two"
    prereg = {"version": 1, "primary_metric": "final_reward", "contrasts": [
        {"name": "accuracy", "arm": "dhpo-e-branch", "baseline": "grpo", "direction": "greater"}]}
    data = json.dumps(prereg).encode()
    load_or_create(root, Sweep(("grpo", "dhpo-e"), (), (0, 1), (), 40, pr.digest(data)), data)
    for seed in (0, 1):
        write_run(root / f"grpo-s{seed}", "grpo", seed, {0: 0.2, 40: 0.3}, flat(1.0), flat(20.0), extra=binding(0.02))
        write_run(root / f"dhpo-e-s{seed}", "dhpo-e", seed, {0: 0.2, 40: 0.3}, flat(1.0), flat(20.0), clip="branch")
    row = analyse(root).contrasts.iloc[0]
    assert np.isnan(row["lo"]) and np.isnan(row["p"]) and row["mean"] == 0.0  # issue 26: not 0.000 [0.000, 0.000]
    assert row["verdict"] == ("no verdict: 2 shared seeds, fewer than 3 seeds: the spread is estimated from at most "
                              "one difference (the 95 % t quantile is 12.7 at 1 degree of freedom) and the exact "
                              "sign-flip p cannot fall below 0.5")
