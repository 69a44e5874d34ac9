"""Every page of the registry under Streamlit's AppTest, on fixture runs: the figures carry the runs' data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest
from tests.dashboard.dash_helpers import APP, figure, figures, no_errors, open_page, panels, texts, trace
from tests.dashboard.fixture_runs import entropy_at, sample_advantage, write_eval, write_lr_sweep, write_run

from dhpo_suite.dashboard.registry import PAGE_DIR, PAGES, RUNS_DIR_ENV
from dhpo_suite.runs import RunWriter, StepRecord, read_manifest


def check_runs(at, root):
    table = at.dataframe[0].value
    assert table.loc["live", "status"] == "running"  # written seconds ago: not stale
    assert list(table.index) == ["dhpo-e", "grpo", "live"]
    assert table.loc["live", "status"] == "running" and table.loc["grpo", "status"] == "completed"
    assert table.loc["dhpo-e", "steps"] == 30 and table.loc["dhpo-e", "evals"] == 2
    assert table.loc["grpo", "clip"] == "—" and table.loc["dhpo-e", "mixing"] == "entropy"
    assert at.sidebar.multiselect[0].value == ["dhpo-e", "grpo", "live"]
    # Summaries beside the settings: final values are the mean of the last 10 logged steps.
    assert table.loc["dhpo-e", "final entropy"] == pytest.approx(0.08) and table.loc["grpo", "final entropy"] == 0.8
    assert table.loc["dhpo-e", "collapse step"] == 18 and pd.isna(table.loc["grpo", "collapse step"])
    assert table.loc["dhpo-e", "entropy collapse"] == 18 and table.loc["dhpo-e", "length collapse"] == 18
    assert table.loc["dhpo-e", "collapse"] == "collapsed at step 18 (entropy from 18, length from 18)"
    assert table.loc["grpo", "collapse"] == "no collapse"
    assert table.loc["dhpo-e", "last eval AVG"] == pytest.approx(30.0)  # step-20 evaluation: 0.1 + 20/100
    assert table.loc["grpo", "final reward"] == pytest.approx(np.mean([0.2 + 0.5 * s / 30 for s in range(20, 30)]))
    assert table.loc["dhpo-e", "eps_high"] == 0.28 and table.loc["grpo", "eps_low"] == 0.2


def check_dynamics(at, root):
    assert [m.value for m in at.markdown if 'class="run-legend"' in m.value]  # one legend for every chart
    at.multiselect(key="dynamics_metrics").set_value(["lr"]).run()
    at.toggle(key="dynamics_log").set_value(True).run()
    no_errors(at)
    lr = figure(at, "lr")
    assert lr["layout"]["yaxis"]["type"] == "log" and list(trace(lr, "grpo")["y"])[:3] == pytest.approx([1e-6] * 3)
    assert lr["layout"]["hovermode"] == "x unified" and lr["layout"]["showlegend"] is False
    at.toggle(key="dynamics_log").set_value(False).run()
    at.multiselect(key="dynamics_metrics").set_value([]).run()
    at.slider(key="dynamics_smooth").set_value(0.0).run()
    no_errors(at)
    ent = figure(at, "Token entropy")
    assert list(trace(ent, "dhpo-e")["y"]) == pytest.approx([entropy_at(s, 18) for s in range(30)])
    assert len(trace(ent, "live")["x"]) == 12
    acc = figure(at, "AVG accuracy")
    assert list(trace(acc, "dhpo-e")["x"]) == [10, 20] and list(trace(acc, "dhpo-e")["y"]) == pytest.approx([20, 30])
    # The panels are one figure of subplots (the browser's cost is per figure); the clip fractions are drawn
    # only when their expander is opened, which the URL keeps.
    assert [f["title"] for f in figures(at)] == [""] and "clip" not in at.query_params
    at.session_state["dynamics_clip"] = True
    at.run()
    assert [f["title"].split(":")[0] for f in figures(at)] == ["", "Clip fractions per branch (dashed"]
    assert at.query_params["clip"] == "1"
    clip = figure(at, "Clip fractions")
    outside = [t for t in clip["data"] if t.get("meta") == "clip/token/outside_high" and t["name"] == "grpo · outside"]
    assert outside[0]["line"]["dash"] == "dash"
    assert list(outside[0]["y"]) == pytest.approx([0.02 * (1 + s / 30) for s in range(30)])
    assert [p["title"].split(":")[0] for p in panels(figures(at)[0])] == [
        "Token entropy", "Response length", "Truncation rate", "Reward (mean per response)", "AVG accuracy vs step",
        "Mixing weight w", "KL(π_old‖π), k3", "Gradient norm (before clipping)"]
    at.slider(key="dynamics_range").set_value((5, 9)).run()
    assert list(trace(figure(at, "Token entropy"), "grpo")["x"]) == [5, 6, 7, 8, 9]
    # Raw and smoothed both drawn, each labelled as what it is (issue 30: the EMA was labelled as the metric).
    at.slider(key="dynamics_smooth").set_value(0.5).run()
    ent = figure(at, "Token entropy")
    raw, smooth = trace(ent, "dhpo-e raw"), trace(ent, "dhpo-e")
    assert list(raw["y"]) == [0.8] * 5 and "(raw)" in raw["hovertemplate"]
    assert "entropy/mean (EMA 0.5)" in smooth["hovertemplate"]
    grad = trace(figure(at, "Gradient norm"), "grpo")  # EMA 0.5 from step 5: s = (x5 + 0.5·x4...)/(1 + 0.5 ...)
    g = pd.Series(trace(figure(at, "Gradient norm"), "grpo raw")["y"])
    assert list(grad["y"]) == pytest.approx(list(g.ewm(alpha=0.5, adjust=True).mean()))
    # The view is in the URL; every chart has its own linear/log switch; the x axis can be wall time.
    assert at.query_params["range"] == "5-9" and at.query_params["smooth"] == "0.5"
    assert [b["label"] for b in ent["layout"]["updatemenus"][0]["buttons"]] == ["linear", "log"]
    at.radio(key="dynamics_x").set_value("time").run()
    ent = figure(at, "Token entropy")
    assert ent["layout"]["xaxis"]["title"]["text"].startswith("wall time") and min(trace(ent, "grpo")["x"]) >= 0
    assert at.query_params["x"] == "time"


def check_collapse(at, root):
    verdicts = at.dataframe[0].value
    assert verdicts.loc["dhpo-e", "collapse step"] == "18"
    assert verdicts.loc["grpo", "collapse step"] == "—" and verdicts.loc["live", "collapse step"] == "—"  # no None
    why = figure(at, "Collapse: when and why")
    assert {s["x0"] for s in why["layout"]["shapes"]} == {18}  # the detected step, marked across the rows
    by_metric = {(t["name"], t["meta"]): t for t in why["data"]}
    # One shared step axis: entropy, length, clip per branch, KL, all-correct/all-wrong groups.
    assert {m for _, m in by_metric} == {"entropy/mean", "length/mean", "clip/token/binding", "clip/sequence/binding",
                                         "clip/mixed/binding", "kl/k3", "groups/all_correct_frac",
                                         "groups/all_wrong_frac"}
    assert list(by_metric[("dhpo-e", "entropy/mean")]["y"]) == pytest.approx([entropy_at(s, 18) for s in range(30)])
    assert (list(by_metric[("grpo", "clip/token/binding")]["y"])
            == pytest.approx([0.015 * (1 + s / 30) for s in range(30)]))
    assert ("grpo", "clip/mixed/binding") not in by_metric  # grpo has no mixed branch
    axes = [k for k in why["layout"] if k.startswith("yaxis")]
    assert len(axes) == 5 and all(why["layout"][a].get("matches", "x") for a in axes)
    assert why["layout"]["yaxis3"]["tickformat"].endswith("%")
    # The step view below, drawn only once opened (a click on the chart opens it, or a link with a step):
    # outlier tokens and responses of the step (last one by default).
    assert "**Sampled responses**" not in texts(at) and "step" not in at.query_params
    at.session_state["collapse_step_open"] = True
    at.run()
    assert at.number_input(key="collapse_step_box").value == 29 and at.query_params["step"] == "29"
    assert "**Sampled responses**" in texts(at) and "**Response #290**" in texts(at)  # the step's view
    assert figures(at)[-1]["title"].startswith("Collapse: when and why")  # percentiles drawn only on request
    at.segmented_control(key="collapse_view").set_value("Entropy percentiles").run()
    no_errors(at)
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
    clip = figure(at, "Clip fractions per branch")
    names = {t["name"] for t in clip["data"]}
    # dhpo-e clips per branch (eq. 11): its mixed row is relabelled, not shown as "outside"/"binding".
    assert {"dhpo-e · outside", "dhpo-e · binding", "dhpo-e · m outside token ε (reference)",
            "dhpo-e · surrogate clipped"} <= names
    assert clip["layout"]["yaxis"]["tickformat"].endswith("%")
    # the leak: binding_kept is 0.4 at every step of the fixture's dhpo-e; token binding 1.5 % × (1 + step/30)
    said = texts(at)
    assert "Trust-region leak of dhpo-e: 40.0% of the gradient kept on the tokens whose own clip (`token`)" in said
    assert f"{np.mean([0.015 * (1 + s / 30) for s in range(30)]):.2%} of tokens" in said
    summary = at.dataframe[0].value  # the run's tokens that bind most (over the sampled steps)
    assert list(summary.columns) == ["token", "count", "share of binding outliers", "branches", "mean ratio",
                                     "mean advantage"]
    assert len(summary) > 0 and summary["count"].is_monotonic_decreasing
    table = at.dataframe[1].value
    assert ("left ⟦tok29_token_0⟧ right" in set(table["context"])
            and set(table["branch"]) == {"token", "sequence", "mixed"})
    # Issue 43: the outliers without gradient (advantage 0, not binding: response 1 of each branch) hide.
    assert "left ⟦tok29_token_1⟧ right" in set(table["context"])
    at.toggle(key="outliers_grad").set_value(True).run()
    kept = at.dataframe[1].value
    assert len(kept) == len(table) - 3 and "left ⟦tok29_token_1⟧ right" not in set(kept["context"])
    assert (kept["advantage"] != 0).all() and "3 outlier tokens without gradient hidden" in texts(at)
    at.radio(key="outliers_branch").set_value("sequence").run()
    at.radio(key="outliers_sign").set_value("A<0").run()
    no_errors(at)
    heat = figure(at, "log(ratio) of the sequence branch (A<0)")
    assert sorted(s["y0"] for s in heat["layout"]["shapes"]) == pytest.approx([np.log(1 - 3e-4), np.log(1 + 4e-4)])
    at.radio(key="outliers_branch").set_value("mixed").run()
    at.selectbox(key="outliers_run").set_value("grpo").run()  # grpo has no mixed branch
    no_errors(at)
    assert at.radio(key="outliers_branch").options == ["token", "sequence"]
    assert "Trust-region leak of grpo: 0.0% of the gradient kept" in texts(at)
    assert figure(at, "log(ratio) of the token branch")


def check_rollouts(at, root):
    assert at.number_input(key="rollouts_step_box").value == 29
    html = [m.value for m in at.markdown if 'class="rollout"' in m.value]
    assert len(html) == 2 and html[0].count('class="tok"') == 6 and "box-shadow" in html[0]
    headers = [m.value for m in at.markdown if m.value.startswith("**Response #")]
    assert headers[0].startswith(f"**Response #290** · reward 0 · advantage {sample_advantage(29, 0):+.3g}")
    legend = [m.value for m in at.markdown if 'class="color-legend"' in m.value][0]
    assert "≤ 0.8" in legend and "≥ 1.28" in legend  # the trust region of the token ratio
    assert "Blue: ratio below 1" in texts(at)
    at.radio(key="rollouts_color").set_value("entropy").run()
    no_errors(at)
    assert "White → purple" in texts(at) and "Blue: ratio" not in texts(at)  # the caption of the colouring shown
    legend = [m.value for m in at.markdown if 'class="color-legend"' in m.value][0]
    assert "2 nats" in legend  # the step's largest entropy is the full colour
    html = [m.value for m in at.markdown if 'class="rollout"' in m.value][0]
    assert "#762a83;color:#ffffff" in html  # darkest cell: white text, never black on dark


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
    said = texts(at)  # the problem, not the chat template around it
    assert "**Problem** Problem 0 of aime24?" in said and "im_start" not in said and "**Gold answer** `0`" in said
    # "Wrong only": the 6 odd samples (extracted p + 1) of the 3 problems; each problem's wrong samples only.
    at.toggle(key="eval_wrong").set_value(True).run()
    wrong = at.dataframe[1].value  # table 1, the wrong samples, problems, samples
    assert len(wrong) == 6 and (wrong["extracted"].astype(int) == wrong["problem_id"].str[-1].astype(int) + 1).all()
    assert "6 of 12 samples graded wrong" in texts(at)
    assert set(wrong["problem"]) == {f"Problem {p} of aime24?" for p in range(3)}  # the text, not only ids
    assert at.query_params["wrong"] == "1" and at.query_params["eval"] == "evals/base-model"
    assert [e.label for e in at.expander if e.label.startswith("sample")] == ["sample 1 · ✗ · extracted '1'",
                                                                           "sample 3 · ✗ · extracted '1'"]
    # Side by side: the same problem's samples of two checkpoints.
    at.selectbox(key="eval_other").set_value("dhpo-e · step 10").run()
    no_errors(at)
    heads = [m.value for m in at.markdown if "correct" in m.value and m.value.startswith("**")]
    assert heads == ["**evals/base-model**: 2/4 correct", "**dhpo-e · step 10**: 2/4 correct"]
    assert at.dataframe[2].value["change"].tolist() == [0.0, 0.0, 0.0]  # table 1, wrong, the comparison


def check_sweep(at, root):  # the statistics themselves: tests/science (test_compare.py, test_sweep_page.py)
    summary = at.table[0].value.T  # shown with groups as columns
    assert list(summary.index) == ["dhpo-e", "grpo"] and summary["n"].tolist() == ["2", "1"]
    assert "1 runs not completed" in texts(at) and "live" in texts(at)
    assert [t["name"] for t in figure(at, "Token entropy (nats) across seeds")["data"]
            if t.get("mode")] == ["dhpo-e", "grpo"]


CHECKS = {"runs.py": check_runs, "dynamics.py": check_dynamics, "collapse.py": check_collapse,
          "outliers.py": check_outliers, "rollouts.py": check_rollouts, "evaluation.py": check_evaluation,
          "sweep.py": check_sweep}


@pytest.mark.parametrize("page", PAGES, ids=[p.file for p in PAGES])
def test_page_shows_the_runs_data(page, runs_root, monkeypatch):
    assert page.file in CHECKS, f"page {page.file} has no AppTest check: add one to CHECKS"
    at = open_page(monkeypatch, runs_root, page.file)
    no_errors(at)
    CHECKS[page.file](at, runs_root)


@pytest.mark.parametrize("page", PAGES, ids=[p.file for p in PAGES])
def test_a_page_opened_first_runs_inside_app_py(page, runs_root, monkeypatch):
    # A deep link's first load (test_browser_links.py in Chromium): with the pages in a pages/ folder Streamlit ran
    # the page alone, without app.py's navigation and set-up (its style sheet is the sign here).
    monkeypatch.setenv(RUNS_DIR_ENV, str(runs_root))
    at = AppTest.from_file(str(APP), default_timeout=60).switch_page(f"{PAGE_DIR.name}/{page.file}").run()
    no_errors(at)
    assert at.title[0].value.startswith(page.title) and at.sidebar.multiselect[0].label == "Runs to compare"
    assert any("stMainBlockContainer" in h.proto.body for h in at.get("html")), page.file


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
        "rollouts.py": [],
        "evaluation.py": ["step-000003/summary.json", "torn last line"],
        "sweep.py": ["empty/scalars: no committed steps yet", "manifest.json: malformed JSON at line 2"],
    }[page.file]
    for snippet in expected:
        assert snippet in said, f"{page.file} does not say {snippet!r}:\n{said}"


def test_outliers_page_reports_missing_files_of_the_chosen_step(damaged_root, monkeypatch):
    at = open_page(monkeypatch, damaged_root, "outliers.py")
    at.sidebar.multiselect[0].set_value(["partial"]).run()
    at.number_input(key="outliers_step_box").set_value(7).run()
    no_errors(at)
    assert "outliers/step-000007.parquet" in texts(at)
    at.switch_page("app_pages/rollouts.py").run()
    at.number_input(key="rollouts_step_box").set_value(7).run()
    said = texts(at)
    assert "No responses recorded at step 7 of partial" in said and "samples/step-000007.parquet: missing" in said


def test_a_running_run_without_new_steps_for_long_is_stale():
    import time

    from dhpo_suite.dashboard.controls import STALE_AFTER_S, is_stale

    assert is_stale(pd.Series({"last_update": time.time() - STALE_AFTER_S - 1}))
    assert not is_stale(pd.Series({"last_update": time.time() - 5}))
    assert not is_stale(pd.Series({"last_update": None}))  # no step yet: just started


def test_regression_branches_filter_offers_mixed_again_after_a_grpo_run(runs_root, monkeypatch):
    """Bug: switching from a GRPO run to a DHPO run left the Branches filter without "mixed", silently."""
    at = open_page(monkeypatch, runs_root, "outliers.py")
    branches = lambda: [m for m in at.multiselect if m.label == "Branches"][0]  # noqa: E731
    assert branches().value == ["token", "sequence", "mixed"]
    at.selectbox(key="outliers_run").set_value("grpo").run()
    assert branches().value == ["token", "sequence"]
    at.selectbox(key="outliers_run").set_value("dhpo-e").run()
    no_errors(at)
    assert branches().value == ["token", "sequence", "mixed"]
    assert set(at.dataframe[-1].value["branch"]) == {"token", "sequence", "mixed"}


def test_regression_response_labels_follow_the_step(runs_root, monkeypatch):
    """Bug: after moving the step slider the response's label (reward, advantage, tokens) was the previous
    step's. Every label shown must be that of the step now chosen, whichever way it was chosen."""
    at = open_page(monkeypatch, runs_root, "rollouts.py")
    for how, step in (("slider", 12), ("slider", 13), ("box", 5), ("slider", 6), ("box", 29)):
        if how == "slider":
            at.select_slider(key="rollouts_step_slider").set_value(step).run()
        else:
            at.number_input(key="rollouts_step_box").set_value(step).run()
        no_errors(at)
        assert at.number_input(key="rollouts_step_box").value == step
        assert at.select_slider(key="rollouts_step_slider").value == step
        headers = [m.value for m in at.markdown if m.value.startswith("**Response #")]
        assert headers == [f"**Response #{10 * step + r}** · reward {float((r + step) % 2 == 0):g} · advantage "
                           f"{sample_advantage(step, r):+.3g} · 6 tokens" for r in range(2)], (how, step)


def test_an_outlier_row_opens_its_full_response(runs_root, monkeypatch):
    at = open_page(monkeypatch, runs_root, "outliers.py")
    at.number_input(key="outliers_step_box").set_value(12).run()
    table = at.dataframe[-1].value
    row = int(np.flatnonzero(table["context"] == "left ⟦tok12_mixed_1⟧ right")[0])
    at.session_state["outliers_table"] = {"selection": {"rows": [row], "columns": [], "cells": []}}
    at.run()
    no_errors(at)
    said = texts(at)
    assert "The response of outlier ⟦tok12_mixed_1⟧ (mixed branch, position 4)" in said
    assert ("**Response #1** · reward 0 · advantage" in said
            and "recorded because an outlier token comes from it" in said)
    assert "**Prompt** What is 2 + 2? (step 12)" in said and "**Gold answer** `4`" in said
    html = [m.value for m in at.markdown if 'class="rollout"' in m.value]
    assert len(html) == 1 and html[0].count("outline:3px solid #ff8c00") == 1
    assert 'title="#4 ' in html[0].split("outline:3px")[0].rsplit("<span", 1)[1]  # the outlined token is #4


def test_runs_table_follows_unpicked_running_runs_and_new_evaluations(tmp_path, monkeypatch):
    """Issue 30: an unpicked running run showed its first step count forever, and "evals" stayed 0 after an
    evaluation while "last eval AVG" beside it showed the new value."""
    done = write_run(tmp_path / "done", steps=5, eval_every=0)
    write_run(tmp_path / "live", steps=2, close=None, eval_every=0)
    at = open_page(monkeypatch, tmp_path, "runs.py")
    at.sidebar.multiselect[0].set_value(["done"]).run()
    table = at.dataframe[0].value
    assert table.loc["live", "steps"] == 2 and table.loc["done", "evals"] == 0
    assert "running, refreshed every 5 s: live (2 steps)" in texts(at)
    w = RunWriter(tmp_path / "live", read_manifest(tmp_path / "live"), resume=True, fsync=False)
    w.write_step(StepRecord(2, {"entropy/mean": 0.7}))
    write_eval(done, 4)  # AVG 0.14
    at.run()
    table = at.dataframe[0].value
    assert table.loc["live", "steps"] == 3 and "live (3 steps)" in texts(at)
    assert table.loc["done", "evals"] == 1 and table.loc["done", "last eval AVG"] == pytest.approx(14.0)


def test_counts_stay_integers_beside_an_invalid_run(damaged_root, monkeypatch):
    table = open_page(monkeypatch, damaged_root, "runs.py").dataframe[0].value
    assert pd.isna(table.loc["bad-manifest", "steps"]) and table.loc["partial", "steps"] == 8
    assert all(str(table[c].dtype) == "Int64" for c in ("steps", "evals", "checkpoints", "seed", "last_step"))


def test_missing_cells_are_drawn_as_a_dash_and_numbers_stay_numbers(tmp_path, monkeypatch):
    """Streamlit drew a missing cell as a grey "None"; a numeric column no run had (no evaluation yet) was text,
    "—" strings, which a number column draws as an error cell and cannot sort. Now every missing cell is
    missing in the data (NaN / NA, so columns sort as numbers) and drawn as the table's placeholder."""
    write_run(tmp_path / "a", steps=5, eval_every=0)
    write_run(tmp_path / "b", steps=3, close=None, eval_every=0, algo="grpo")
    at = open_page(monkeypatch, tmp_path, "runs.py")
    frame = at.dataframe[0]
    assert frame.proto.placeholder == "—"
    table = frame.value
    assert table["last eval AVG"].isna().all() and table["last eval AVG"].dtype == "float64"
    numbers = ["final reward", "final entropy", "final length", "last eval AVG", "lr", "collapse step", "steps"]
    assert all(pd.api.types.is_numeric_dtype(table[c]) for c in numbers), table.dtypes
    assert pd.isna(table.loc["b", "collapse step"]) and table.loc["a", "final length"] == 200.0
    assert not (table[numbers].astype(str) == "—").any().any()  # the dash is drawn, not stored


def test_sidebar_filters_pick_the_runs_of_a_setting(tmp_path, monkeypatch):
    write_lr_sweep(tmp_path)
    at = open_page(monkeypatch, tmp_path, "runs.py")
    at.multiselect(key="filter_lr").set_value(["0.002"]).run()
    at.multiselect(key="filter_algorithm").set_value(["grpo"]).run()
    at.button(key="filter_pick").click().run()
    no_errors(at)
    assert at.sidebar.multiselect[0].value == [f"lr-large/grpo-s{s}" for s in range(3)]


def test_dynamics_averages_the_seeds_of_each_group(tmp_path, monkeypatch):
    """Issue 43: grouping by setting (mean ± 95 % interval across seeds) on Dynamics, not only on Sweep."""
    write_lr_sweep(tmp_path)
    at = open_page(monkeypatch, tmp_path, "dynamics.py")
    assert at.sidebar.multiselect[0].value == [f"lr-large/dhpo-e-s{s}" for s in range(3)] + ["lr-large/grpo-s0"]
    at.slider(key="dynamics_smooth").set_value(0.0).run()
    at.toggle(key="dynamics_group").set_value(True).run()
    no_errors(at)
    ent = figure(at, "Token entropy")
    assert ent["title"] == "Token entropy: mean, 95 % band" and at.query_params["group"] == "1"
    mean = trace(ent, "dhpo-e")  # entropy 0.8·0.96^step + 0.01·seed (fixture_runs.write_lr_sweep), seeds 0-2
    assert list(mean["y"]) == pytest.approx([0.8 * 0.96 ** s + 0.01 for s in range(1, 41)])
    hi = trace(ent, "dhpo-e entropy/mean hi")  # sd 0.01, n 3: half-width t(0.975, 2)·0.01/√3
    assert list(hi["y"]) == pytest.approx([0.8 * 0.96 ** s + 0.01 + 4.302653 * 0.01 / 3 ** 0.5
                                           for s in range(1, 41)], abs=1e-6)
    assert {t["name"] for t in ent["data"]} >= {"dhpo-e", "grpo"} and "lr-large/grpo-s0" not in {
        t["name"] for t in ent["data"]}


@pytest.mark.parametrize("page", PAGES, ids=[p.file for p in PAGES])
def test_no_developer_comment_is_rendered_as_page_text(page):
    # Streamlit's "magic" writes every bare string of a page script onto the page (issue 30: two did).
    import ast

    from dhpo_suite.dashboard.registry import PAGE_DIR

    body = ast.parse((PAGE_DIR / page.file).read_text()).body
    bare = [n.lineno for n in body[1:] if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)]
    assert bare == [], f"{page.file}: bare strings at lines {bare} would be shown on the page"
