"""Every page on runs shaped exactly like real ones (dhpo_suite.testing.synthetic_runs), one per algorithm of its
registry: branches without a trust region (gspo's token branch, sapo), one-sided regions (cispo), no mixing
weight (baselines) must all open without an error, and the heatmap marks exactly the recorded trust region."""

from __future__ import annotations

import numpy as np
import pytest

from dhpo_suite.dashboard.registry import PAGES
from dhpo_suite.testing.synthetic_runs import ALGO_BOUNDS, write_synthetic_run
from tests.dashboard.dash_helpers import figure, figures, no_errors, open_page


@pytest.fixture(scope="module")
def synthetic_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("synthetic")
    for algo in ALGO_BOUNDS:
        write_synthetic_run(root / algo, steps=16, algo=algo, collapse_at=8 if algo == "dhpo-e" else None,
                            checkpoint_every=8)
    return root


@pytest.mark.parametrize("page", PAGES, ids=[p.file for p in PAGES])
def test_every_page_opens_runs_of_every_algorithm(page, synthetic_root, monkeypatch):
    at = open_page(monkeypatch, synthetic_root, page.file)
    at.sidebar.multiselect[0].set_value(sorted(ALGO_BOUNDS)).run()
    no_errors(at)
    if page.file in ("dynamics.py", "collapse.py", "outliers.py"):
        assert figures(at)


def test_outliers_heatmap_marks_each_algorithms_trust_region(synthetic_root, monkeypatch):
    at = open_page(monkeypatch, synthetic_root, "outliers.py")
    at.sidebar.multiselect[0].set_value(sorted(ALGO_BOUNDS)).run()
    for algo in sorted(ALGO_BOUNDS):
        at.selectbox(key="outliers_run").set_value(algo).run()
        for branch in at.radio(key="outliers_branch").options:
            at.radio(key="outliers_branch").set_value(branch).run()
            no_errors(at)
            heat = figure(at, f"log(ratio) of the {branch} branch")
            lines = sorted(s["y0"] for s in heat["layout"].get("shapes", []))
            bounds = ALGO_BOUNDS[algo].get(branch)
            if bounds is None:
                assert lines == [], (algo, branch)  # no trust region: nothing to mark
            elif bounds[0] > 0:
                assert lines == pytest.approx([np.log(bounds[0]), np.log(bounds[1])]), (algo, branch)
            else:  # one-sided (cispo, no lower bound): only the finite upper edge is drawn, not a mirror of it
                assert lines == pytest.approx([np.log(bounds[1])]), (algo, branch)
