"""Comparing evaluations: the paired interval and tests against scipy/exact binomial values computed here by
hand from raw numbers, the standard error in summary.json, and the commands as users run them."""

from math import comb, sqrt

import pytest
from scipy import stats
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.eval.compare import paired_difference
from dhpo_suite.eval.runner import summarize_dir
from dhpo_suite.runs import eval_results as er


def test_paired_interval_and_t_test_match_scipy_ttest_rel():
    a = [0.25, 0.5, 0.0, 1.0, 0.75, 0.25, 0.5, 0.0]
    b = [0.5, 0.75, 0.25, 1.0, 0.5, 0.75, 0.75, 0.25]
    diff, low, high, p, test = paired_difference(a, b)
    ref = stats.ttest_rel(b, a)  # scipy's own paired test, not the code's formula
    ci = ref.confidence_interval(0.95)
    assert diff == pytest.approx(sum(b) / 8 - sum(a) / 8)
    assert (low, high, p) == pytest.approx((ci.low, ci.high, ref.pvalue))
    assert test == "paired t"


def test_equal_differences_get_science_s_p_and_scipy_s_where_scipy_gives_one():
    """Every problem up by 0.5: scipy.stats.ttest_rel says t = inf, p = 0 (eval-compare said 1.0, the seeds'
    compare 0.0). All differences 0: scipy's 0/0 is NaN; both say 1.0 (no evidence of a difference; science.stats
    .t_test_p's docstring says why)."""
    from dhpo_suite.science.stats import paired_test

    a, b = [0.0, 0.25, 0.5, 0.25], [0.5, 0.75, 1.0, 0.75]
    _, low, high, p, _ = paired_difference(a, b)
    assert stats.ttest_rel(b, a).pvalue == 0.0
    seeds = paired_test([0.5] * 4)
    assert (low, high, p) == (seeds.lo, seeds.hi, seeds.p) == (0.5, 0.5, 0.0)
    assert paired_difference(a, a)[3] == paired_test([0.0] * 4).p == 1.0


def test_one_sample_a_problem_uses_the_exact_mcnemar_test():
    # 12 problems: B right where A was wrong on 9, A right where B was wrong on 1, 2 concordant
    a = [0] * 9 + [1] + [1, 0]
    b = [1] * 9 + [0] + [1, 0]
    _, _, _, p, test = paired_difference(a, b, one_sample=True)
    n, k = 10, 1  # discordant pairs, the smaller count: two-sided exact binomial(10, 1/2)
    assert p == pytest.approx(2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n)  # 22 / 1024
    assert test == "exact McNemar"


def _results(out, correct: dict[str, list[bool]], model="/m/run/checkpoints/step-000010"):
    records = [{"bench": "aime24", "problem_id": pid, "sample": s, "prompt": "p", "problem": "q", "response": "r",
                "n_tokens": 3, "finish_reason": "stop", "gold": ["1"], "extracted": None, "answer_source": None,
                "correct": ok, "status": "ok", "reason": "-"}
               for pid, oks in correct.items() for s, ok in enumerate(oks)]
    n = len(next(iter(correct.values())))
    er.write_json_atomic(out / er.CONFIG, {"model": model, "benches": {"aime24": {
        "samples": n, "grader": None, "problem_ids": sorted(correct)}}})
    er.rewrite_samples(er.samples_path(out, "aime24"), records)
    return summarize_dir(out)


def test_summary_holds_the_standard_error_of_avg_at_k(tmp_path):
    summary = _results(tmp_path, {"0": [True, True], "1": [True, False], "2": [False, False]})
    m = summary["benchmarks"]["aime24"]
    assert m["avg@2"] == pytest.approx(0.5)
    assert m["avg@2_se"] == pytest.approx(0.5 / sqrt(3))  # sd of (1, 0.5, 0) is 0.5; three problems


def test_eval_compare_pairs_problems_and_the_run_csv(tmp_path):
    a = {"0": [True, False], "1": [False, False], "2": [True, True], "3": [False, False]}
    b = {"0": [True, True], "1": [True, False], "2": [True, True], "9": [True, True]}  # 3 is not in B, 9 not in A
    run = tmp_path / "run"
    _results(er.checkpoint_eval_dir(run, 10), a)
    _results(er.checkpoint_eval_dir(run, 20), b)
    res = CliRunner().invoke(app, ["eval-compare", str(er.checkpoint_eval_dir(run, 10)),
                                   str(er.checkpoint_eval_dir(run, 20))])
    assert res.exit_code == 0, res.output
    row = next(line.split() for line in res.output.splitlines() if line.startswith("aime24"))
    ref = stats.ttest_rel([1.0, 0.5, 1.0], [0.5, 0.0, 1.0]).confidence_interval(0.95)  # problems 0, 1, 2
    assert row[1:5] == ["3", "50.0", "83.3", "33.3"]
    assert row[5:7] == [f"[{100 * ref.low:.1f},", f"{100 * ref.high:.1f}]"]
    res = CliRunner().invoke(app, ["eval-compare", "--run", str(run)])
    assert res.exit_code == 0, res.output
    lines = (run / "evals" / "accuracy.csv").read_text().splitlines()
    assert lines[0].startswith("step,bench,metric,value,se,") and len(lines) == 3
    assert lines[2].startswith("20,aime24,avg@2,0.875,")  # all four of B's problems in its own summary
    res = CliRunner().invoke(app, ["eval-compare", str(tmp_path)])
    assert res.exit_code == 2 and "two results directories" in res.output
