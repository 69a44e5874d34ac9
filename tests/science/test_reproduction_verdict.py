"""benchmarks/reproduction.py's verdict rule: the claimed side of a paired-difference interval, for claims of a
positive (DHPO entropy higher) and a negative (branch clipping oscillates less) difference; and the claims'
verdicts on runs whose curves the test writes (the collapse rule: GRPO's series down 20 % on average)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from dhpo_suite.science.compare import Interval

_spec = importlib.util.spec_from_file_location(
    "reproduction", Path(__file__).parents[2] / "benchmarks" / "reproduction.py")
reproduction = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(reproduction)


def test_verdict_reads_the_interval_on_the_claimed_side():
    nan = float("nan")
    assert reproduction.verdict(Interval(0.02, 0.01, 0.03, 4), +1) == "reproduced"
    assert reproduction.verdict(Interval(-0.02, -0.03, -0.01, 4), +1).startswith("not reproduced")
    assert reproduction.verdict(Interval(-0.02, -0.03, -0.01, 4), -1) == "reproduced"
    assert reproduction.verdict(Interval(0.02, 0.01, 0.03, 4), -1).startswith("not reproduced")
    for sign in (+1, -1):  # an interval containing 0 decides nothing, whichever side is claimed
        assert reproduction.verdict(Interval(-0.006, -0.032, 0.027, 4), sign).startswith("inconclusive")
    assert reproduction.verdict(Interval(0.1, nan, nan, 1), +1).startswith("inconclusive")


def _claims(tmp_path, grpo_late_entropy: float):
    """Three seeds: GRPO's entropy steps from 1.0 to `grpo_late_entropy` after step 10, DHPO-E's stays at 1.0;
    lengths are flat; DHPO-E ends 0.1 above GRPO in held-out reward at every seed."""
    from dhpo_suite.science import compare as cmp
    from tests.science.test_compare import flat, write_run

    for seed in range(3):
        write_run(tmp_path / f"grpo-s{seed}", "grpo", seed, {0: 0.2, 20: 0.3, 40: 0.3 + 0.05 * seed},
                  lambda s: 1.0 if s <= 10 else grpo_late_entropy, flat(20.0))
        write_run(tmp_path / f"dhpo-e-branch-s{seed}", "dhpo-e", seed, {0: 0.2, 20: 0.3, 40: 0.4 + 0.05 * seed},
                  flat(1.0), flat(20.0), clip="branch")
    metrics, scalars, problems = cmp.load_sweep(tmp_path)
    assert problems == []
    return {c["claim"].split(" (")[0]: c for c in reproduction.claims(metrics, scalars)}


def test_claims_verdicts_follow_the_collapse_rule_and_the_paired_intervals(tmp_path):
    claims = _claims(tmp_path, grpo_late_entropy=0.5)  # a 50 % fall at every seed: the collapse occurred
    entropy = claims["GRPO's token entropy collapses while DHPO keeps entropy higher late in training"]
    assert entropy["verdict"] == "dhpo-e-branch: reproduced"
    assert "changed by -50.0%" in entropy["evidence"][0] and "seed 2 -50%" in entropy["evidence"][0]
    length = claims["GRPO's response length collapses; DHPO's stays longer"]
    assert length["verdict"].startswith("inconclusive: the collapse the claim is about did not occur")
    assert "0 of 3 seeds passed it" in length["verdict"]
    accuracy = claims["DHPO reaches higher accuracy than GRPO"]
    assert accuracy["verdict"] == "dhpo-e-branch: reproduced"  # +0.1 at every seed
    assert "dhpo-e-branch − grpo, final held-out reward: 0.100 [0.100, 0.100]" in accuracy["evidence"]


def test_a_fall_short_of_the_rule_is_inconclusive_but_reports_the_dhpo_part(tmp_path):
    claims = _claims(tmp_path, grpo_late_entropy=0.9)  # a 10 % fall: short of the 20 % rule
    v = claims["GRPO's token entropy collapses while DHPO keeps entropy higher late in training"]["verdict"]
    assert v.startswith("inconclusive: the collapse the claim is about did not occur")
    assert "changed by -10.0% on average" in v and "0 of 3 seeds passed it" in v
    assert v.endswith("for the record: dhpo-e-branch: reproduced")
    assert reproduction.glance(v) == ("inconclusive: the collapse did not occur by the rule; the higher-late-entropy "
                                      "part: dhpo-e-branch: reproduced")  # the report's summary line


def test_the_setting_names_the_model_the_sweep_trained():
    from dhpo_suite.train.sweep import Sweep

    def described(*args: str) -> str:
        return reproduction.model_of(Sweep(algos=["grpo"], clips=[], seeds=[0], train_args=list(args), steps=30))

    assert described("--steps", "30").startswith("tiny Qwen3")
    assert described("--model", "smollm2-135m", "--lr", "1e-5").startswith("SmolLM2-135M-Instruct")
    assert described("--model", "/m/qwen").startswith("model `/m/qwen`")
