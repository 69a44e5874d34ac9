"""Response ids across data-parallel ranks (rank_telemetry.ids_from_uids), on a batch verl split mid-group."""

from __future__ import annotations

from dhpo_suite.train.verl_backend.rank_telemetry import ids_from_uids


def test_a_group_split_across_ranks_stays_one_group_with_its_problem():
    # verl balances rows, not groups: rank 0 holds b's first response and both of a's, rank 1 b's second and
    # both of c's. The documented numbering (docs/verl.md, "Telemetry from every rank"): prompt p = rank of the
    # uid in sorted order (a=0, b=1, c=2), j = order within the uid across ranks in rank order, id = p*G + j.
    uids = [["b", "a", "a"], ["b", "c", "c"]]
    facts = [("B?", "2"), ("A?", "1"), ("A?", "1"), ("B?", "2"), ("C?", "3"), ("C?", "3")]
    expected_prompts = [("A?", "1"), ("B?", "2"), ("C?", "3")]
    assert ids_from_uids(uids, facts, rank=0) == ([2, 0, 1], 2, expected_prompts)
    assert ids_from_uids(uids, facts, rank=1) == ([3, 4, 5], 2, expected_prompts)
