"""Every page of the registry under Streamlit's AppTest, on fixture runs: the figures carry the runs' data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tests.dashboard.dash_helpers import figure, figures, no_errors, open_page, texts, trace
from tests.dashboard.fixture_runs import entropy_at

from dhpo_suite.dashboard.registry import PAGES


def check_runs(at, root):
    table = at.dataframe[0].value
    assert table.loc["live", "status"] == "running"  # written seconds ago: not stale
    assert list(table.index) == ["dhpo-e", "grpo", "live"]
    assert table.loc["live", "status"] == "running" and table.loc["grpo", "status"] == "completed"
    assert table.loc["dhpo-e", "steps"] == 30 and table.loc["dhpo-e", "evals"] == 2
    assert table.loc["grpo", "clip"] == "—" and table.loc["dhpo-e", "mixing"] == "entropy"
    assert at.sidebar.multiselect[0].value == ["dhpo-e", "grpo", "live"]


def check_dynamics(at, root):
    at.slider(key="dynamics_smooth").set_value(0.0).run()
    no_errors(at)
    ent = figure(at, "Token entropy")
    assert list(trace(ent, "dhpo-e")["y"]) == pytest.approx([entropy_at(s, 18) for s in range(30)])
    assert len(trace(ent, "live")["x"]) == 12
    acc = figure(at, "AVG accuracy")
    assert list(trace(acc, "dhpo-e")["x"]) == [10, 20] and list(trace(acc, "dhpo-e")["y"]) == pytest.approx([20, 30])
    clip = figure(at, "Clip fractions")
    outside = [t for t in clip["data"] if t.get("meta") == "clip/token/outside_high" and t["name"] == "grpo · outside"]
    assert outside[0]["line"]["dash"] == "dash"
    assert list(outside[0]["y"]) == pytest.approx([0.02 * (1 + s / 30) for s in range(30)])
    assert {f["title"].split(":")[0] for f in figures(at)} >= {"Mixing weight w", "Gradient norm (before clipping)"}
    at.slider(key="dynamics_range").set_value((5, 9)).run()
    assert list(trace(figure(at, "Token entropy"), "grpo")["x"]) == [5, 6, 7, 8, 9]


def check_collapse(at, root):
    verdicts = at.dataframe[0].value
    assert verdicts.loc["dhpo-e", "collapse step"] == 18
    assert pd.isna(verdicts.loc["grpo", "collapse step"]) and pd.isna(verdicts.loc["live", "collapse step"])
    det = figure(at, "Collapse detector")
    assert {s["x0"] for s in det["layout"]["shapes"]} == {18}
    groups = figure(at, "Groups without signal")
    assert len(trace(groups, "grpo · all correct")["y"]) == 30
    pct = figure(at, "Entropy percentiles · dhpo-e")
    assert trace(pct, "p50 (median)")["y"][-1] == pytest.approx(0.04)
    split = figure(at, "Token entropy at step 29")
    assert [t["name"] for t in split["data"]] == ["low-entropy majority", "high-entropy minority"]
    assert "carry" in texts(at)


def check_outliers(at, root):
    heat = figure(at, "log(ratio) of the token branch (all)")
    z = np.asarray(heat["data"][0]["z"], float)
    assert z.shape[1] == 30 and np.nansum(10 ** z, axis=0) == pytest.approx(np.ones(30))
    assert sorted(s["y0"] for s in heat["layout"]["shapes"]) == pytest.approx([np.log(0.8), np.log(1.28)])
    table = at.dataframe[0].value
    assert "left ⟦tok29_token_0⟧ right" in set(table["context"]) and set(table["branch"]) == {"token", "sequence", "mixed"}
    html = [m.value for m in at.markdown if 'class="rollout"' in m.value]
    assert len(html) == 1 and html[0].count('class="tok"') == 6 and "box-shadow" in html[0]
    at.radio(key="rollout_color").set_value("entropy").run()
    at.radio(key="outliers_branch").set_value("sequence").run()
    at.radio(key="outliers_sign").set_value("A<0").run()
    no_errors(at)
    heat = figure(at, "log(ratio) of the sequence branch (A<0)")
    assert sorted(s["y0"] for s in heat["layout"]["shapes"]) == pytest.approx([np.log(1 - 3e-4), np.log(1 + 4e-4)])
    assert "box-shadow" not in [m.value for m in at.markdown if 'class="rollout"' in m.value][0]
    at.radio(key="outliers_branch").set_value("mixed").run()
    at.selectbox(key="outliers_run").set_value("grpo").run()  # grpo has no mixed branch
    no_errors(at)
    assert at.radio(key="outliers_branch").options == ["token", "sequence"]
    assert figure(at, "log(ratio) of the token branch")


def check_evaluation(at, root):
    t1 = at.dataframe[0].value
    assert list(t1.columns)[-3:] == ["aime24 (avg@4)", "math500 (avg@4)", "AVG"]
    assert list(t1.index.get_level_values(0)) == ["dhpo-e · step 20", "grpo · step 20", "evals/base-model"]
    assert t1["AVG"].tolist() == pytest.approx([30.0, 30.0, 5.0])  # last checkpoints, then the base model
    at.radio(key="eval_rows").set_value("all").run()
    t1 = at.dataframe[0].value
    assert t1["AVG"].tolist() == pytest.approx([20.0, 30.0, 20.0, 30.0, 5.0])
    curve = figure(at, "AVG accuracy")
    assert [t["name"] for t in curve["data"]] == ["dhpo-e", "grpo"]
    samples = at.dataframe[2].value  # table 1, problems, samples of the chosen problem
    assert len(samples) == 4 and samples["correct"].tolist() == [True, False, True, False]
    assert any("extracted '0'" in e.label for e in at.expander)


CHECKS = {"runs.py": check_runs, "dynamics.py": check_dynamics, "collapse.py": check_collapse,
          "outliers.py": check_outliers, "evaluation.py": check_evaluation}


@pytest.mark.parametrize("page", PAGES, ids=[p.file for p in PAGES])
def test_page_shows_the_runs_data(page, runs_root, monkeypatch):
    assert page.file in CHECKS, f"page {page.file} has no AppTest check: add one to CHECKS"
    at = open_page(monkeypatch, runs_root, page.file)
    no_errors(at)
    CHECKS[page.file](at, runs_root)


@pytest.mark.parametrize("page", PAGES, ids=[p.file for p in PAGES])
def test_page_opens_damaged_runs_and_says_what_is_missing(page, damaged_root, monkeypatch):
    at = open_page(monkeypatch, damaged_root, page.file)
    at.sidebar.multiselect[0].set_value(["partial", "empty", "bad-manifest"]).run()
    if page.file == "outliers.py":
        at.selectbox(key="outliers_run").set_value("partial").run()
    assert not at.exception, [e.value for e in at.exception]
    said = texts(at)
    assert "Run bad-manifest cannot be opened" in said
    expected = {
        "runs.py": ["manifest.json: malformed JSON at line 2"],
        "dynamics.py": ["empty/scalars: no committed steps yet"],
        "collapse.py": ["empty/scalars: no committed steps yet"],
        "outliers.py": ["step-000003.parquet: unreadable Parquet"],
        "evaluation.py": ["step-000003/summary.json", "torn last line"],
    }[page.file]
    for snippet in expected:
        assert snippet in said, f"{page.file} does not say {snippet!r}:\n{said}"


def test_outliers_page_reports_missing_files_of_the_chosen_step(damaged_root, monkeypatch):
    at = open_page(monkeypatch, damaged_root, "outliers.py")
    at.sidebar.multiselect[0].set_value(["partial"]).run()
    at.select_slider(key="outliers_step").set_value(7).run()
    no_errors(at)
    said = texts(at)
    assert "outliers/step-000007.parquet" in said and "No sampled responses recorded at step 7" in said
    assert "samples/step-000007.parquet: missing" in said


def test_a_running_run_without_new_steps_for_long_is_stale():
    import time

    from dhpo_suite.dashboard.controls import STALE_AFTER_S, is_stale

    assert is_stale(pd.Series({"last_update": time.time() - STALE_AFTER_S - 1}))
    assert not is_stale(pd.Series({"last_update": time.time() - 5}))
    assert not is_stale(pd.Series({"last_update": None}))  # no step yet: just started
