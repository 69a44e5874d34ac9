"""Metrics against hand-computed values (pass@k estimator, maj@k ties, lengths, rates)."""

from math import comb

import pytest

from dhpo_suite.eval.metrics import METRICS, bench_metrics, maj_at_k, paper_average, pass_at_k, powers_of_two


def test_pass_at_k_matches_the_unbiased_estimator_by_hand():
    # n=4, c=1: pass@1 = 1/4; pass@2 = 1 - C(3,2)/C(4,2) = 1 - 3/6 = 1/2; pass@4 = 1.
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)
    assert pass_at_k(4, 1, 4) == pytest.approx(1.0)
    assert pass_at_k(32, 0, 8) == 0.0
    # n=32, c=3, k=8: 1 - C(29,8)/C(32,8) = 1 - 4292145/10518300
    assert pass_at_k(32, 3, 8) == pytest.approx(1 - 4292145 / 10518300)
    assert comb(29, 8) == 4292145 and comb(32, 8) == 10518300
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def test_powers_of_two():
    assert powers_of_two(32) == [1, 2, 4, 8, 16, 32]
    assert powers_of_two(5) == [1, 2, 4]
    assert powers_of_two(1) == [1]


def test_maj_at_k_majority_ties_and_abstentions():
    s = [("5", True), ("7", False), ("7", False), (None, False)]
    assert maj_at_k(s, 1) == 1.0  # only "5" votes
    assert maj_at_k(s, 2) == 0.5  # "5" and "7" tied 1-1: one of two tied answers is correct
    assert maj_at_k(s, 4) == 0.0  # "7" wins 2-1; None abstains
    assert maj_at_k([(None, False)] * 3, 2) == 0.0
    three_way = [("a", False), ("b", True), ("c", False)]
    assert maj_at_k(three_way, 3) == pytest.approx(1 / 3)


def _rec(pid, sample, correct, extracted, n_tokens, finish="stop", boxed=True, status="ok"):
    return {"problem_id": pid, "sample": sample, "correct": correct, "extracted": extracted,
            "n_tokens": n_tokens, "finish_reason": finish, "status": status,
            "response": ("\\boxed{%s}" % extracted) if boxed else "no box"}


def test_bench_metrics_by_hand():
    recs = [
        _rec("p1", 0, True, "1", 10), _rec("p1", 1, False, "2", 20, finish="length"),
        _rec("p2", 1, False, "3", 30, status="timeout"), _rec("p2", 0, False, None, 40, boxed=False),
    ]
    m = bench_metrics(recs, n=2)
    assert m["avg@2"] == pytest.approx(0.25)  # (1/2 + 0/2) / 2
    assert m["pass@1"] == pytest.approx(0.25)
    assert m["pass@2"] == pytest.approx(0.5)  # p1 has one correct of 2
    assert m["maj@2"] == pytest.approx(0.25)  # p1: tie "1"/"2" -> 1/2; p2: only "3" votes -> 0
    assert m["len_mean"] == 25 and m["len_median"] == 25
    assert m["trunc_rate"] == 0.25 and m["boxed_rate"] == 0.75
    assert m["grader_timeouts"] == 1 and m["grader_errors"] == 0
    assert m["n_problems"] == 2 and m["complete"] and m["headline"] == "avg@2"


def test_incomplete_problems_are_flagged_and_kept_out_of_pass_at_k():
    m = bench_metrics([_rec("p1", 0, True, "1", 5), _rec("p2", 0, False, "2", 5), _rec("p2", 1, True, "1", 5)], 2)
    assert not m["complete"]
    assert m["pass@2"] == 1.0  # only p2 (complete) counts


def test_paper_average_is_the_mean_of_headlines():
    per = {"a": {"headline": "avg@32", "avg@32": 0.2}, "b": {"headline": "avg@1", "avg@1": 0.6}}
    assert paper_average(per) == pytest.approx(0.4)


def test_every_metric_name_is_documented_in_docs():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "eval.md").read_text()
    for name in METRICS:
        assert f"`{name}`" in doc, name


def test_avg_and_pass_at_k_use_the_same_first_n_samples():
    """After a resume with fewer --samples the file holds more than n samples: only samples 0..n-1 count."""
    recs = [_rec("a", s, c, "1" if c else "2", 10 * (s + 1)) for s, c in enumerate([True, False, True, True])]
    m = bench_metrics(recs, 2)
    assert m["avg@2"] == 0.5 and m["pass@1"] == 0.5 and m["pass@2"] == 1.0  # c=1 of n=2: 1 - C(1,2)/C(2,2)
    assert m["len_mean"] == 15.0 and m["n_samples"] == 2 and m["complete"]
    skipped = [{**_rec("b", 0, False, None, 0), "status": "prompt_too_long", "finish_reason": "skipped"}]
    m = bench_metrics(recs[:2] + skipped + [{**skipped[0], "sample": 1}], 2)
    assert (m["skipped"], m["avg@2"], m["n_problems"]) == (2, 0.25, 2)


def test_fallback_share_counts_answers_found_without_a_marker():
    """The grader's no-marker answers are reported as a share; records from before the field count as marked."""
    recs = [{**_rec("p1", 0, True, "1", 5), "answer_source": "fallback"},
            {**_rec("p1", 1, True, "1", 5), "answer_source": "boxed"},
            {**_rec("p2", 0, False, None, 5), "answer_source": None},
            _rec("p2", 1, False, "2", 5)]  # written before answer_source existed
    assert bench_metrics(recs, 2)["fallback_share"] == pytest.approx(0.25)
