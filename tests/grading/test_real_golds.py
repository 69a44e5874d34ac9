"""Real golds of the 7 test sets: graded correct against themselves and an equivalent rewrite, and
never correct against a near miss (zero false positives)."""

from __future__ import annotations

import pytest

from dhpo_suite.grading import GraderPool
from dhpo_suite.testing.grading_rewrites import equivalent_rewrites, near_miss, responses

from .conftest import BENCHES, load_bench

# Equivalent rewrites math-verify 0.9.0 cannot confirm (false negatives, documented in docs/grading.md).
KNOWN_MISSES = {
    ("minerva_math", "87"), ("minerva_math", "108"),  # `2i t` vs `2 i t`: i read as a symbol once
    ("minerva_math", "139"),  # `\lambda_{\text{red}}` does not parse without the space after \text
    ("minerva_math", "269"),  # `E_{1},E_{2}` does not parse; text comparison is order-sensitive
    ("olympiadbench", "1965"),  # a sentence, compared as text
}


# Sampled to keep the test short on a shared CPU; benchmarks/grading.py grades every gold (0 false
# positives on all 2,866 near misses). AIME, AMC and Minerva are taken whole.
STRIDE = {"gsm8k": 10, "math500": 3, "olympiadbench": 2}


@pytest.fixture(scope="module")
def graded():
    items, meta = [], []
    for bench in BENCHES:
        for number, row in enumerate(load_bench(bench)):
            if number % STRIDE.get(bench, 1):
                continue
            golds = [row["answer"], *row.get("answer_alt", [])]
            forms = equivalent_rewrites(row["answer"])
            rewrite = forms[1 + number % (len(forms) - 1)] if len(forms) > 1 else forms[0]
            for kind, answer in (("self", row["answer"]), ("rewrite", rewrite),
                                 ("near_miss", near_miss(row["answer"]))):
                items.append((responses(answer)[number % 3], golds, bench))
                meta.append((bench, str(row["id"]), kind, answer))
    with GraderPool(workers=2, timeout=2.0) as pool:
        verdicts = pool.grade_many(items)
    return list(zip(meta, verdicts))


@pytest.mark.slow
def test_no_false_positive_on_near_misses(graded):
    wrong = [(m, v) for m, v in graded if m[2] == "near_miss" and v.correct]
    assert not wrong, wrong[:5]
    assert sum(m[2] == "near_miss" for m, _ in graded) > 700


@pytest.mark.slow
def test_golds_and_rewrites_are_accepted(graded):
    # A timeout is never a false positive; on a loaded machine a long symbolic rewrite may hit one.
    missed = [(m, v) for m, v in graded
              if m[2] != "near_miss" and not v.correct and v.status != "timeout"]
    unexpected = [(m, v.reason) for m, v in missed if (m[0], m[1]) not in KNOWN_MISSES]
    assert not unexpected, unexpected[:8]
    assert all(m[2] == "rewrite" for m, _ in missed)  # every gold matches itself
