"""Pure frame → figure functions on small frames: the figures carry the data they should."""

import numpy as np
import pandas as pd
import pytest
from tests.dashboard import fixture_runs

from dhpo_suite.science.collapse import detect_collapse, verdict
from dhpo_suite.dashboard.figures import collapse as fc
from dhpo_suite.dashboard.figures import curves as fcur
from dhpo_suite.dashboard.figures import evaluation as fe
from dhpo_suite.dashboard.figures import outliers as fo
from dhpo_suite.dashboard.figures.tokens import rollout_html, token_colors
from dhpo_suite.dashboard.frames import log_ratio_names, sample_steps
from dhpo_suite.train.telemetry.bins import entropy_edges, log_ratio_edges


def two_runs(n=10):
    steps = np.arange(n)
    a = pd.DataFrame({"run": "a", "step": steps, "entropy/mean": 1.0 - steps / 20, "entropy/p10": 0.1,
                      "entropy/p90": 2.0, "length/mean": 100.0 + steps, "length/p90": 150.0})
    b = a.assign(run="b", **{"entropy/mean": 0.5})
    return pd.concat([a, b], ignore_index=True)


def traces(fig, name=None):
    return [t for t in fig.data if name is None or t.name == name]


def test_ema_matches_the_recursion_and_keeps_nans():
    x = pd.Series([1.0, 2.0, np.nan, 4.0])
    out = fcur.ema(x, 0.5)
    # debiased: s1 = 1; s2 = (0.5·1 + 2)/(1.5); NaN stays NaN; s4 over the 3 values seen
    assert out[0] == pytest.approx(1.0)
    assert out[1] == pytest.approx((0.5 * 1 + 2) / 1.5)
    assert np.isnan(out[2])
    assert out[3] == pytest.approx((0.25 * 1 + 0.5 * 2 + 4) / 1.75)
    assert fcur.ema(x, 0.0).equals(x)
    with pytest.raises(ValueError, match="smoothing"):
        fcur.ema(x, 1.0)


def test_prepare_restricts_the_step_range_and_smooths_per_run():
    f = fcur.prepare(two_runs(), ["entropy/mean", "missing"], alpha=0.9, step_range=(2, 5))
    assert sorted(f["step"].unique()) == [2, 3, 4, 5]
    assert "missing" not in f.columns
    # run b is constant: smoothing leaves it; run a starts its average at step 2 (not contaminated by b)
    assert np.allclose(f.loc[f.run == "b", "entropy/mean"], 0.5)
    assert f.loc[f.run == "a", "entropy/mean"].iloc[0] == pytest.approx(0.9)


def spiky_run(n=1000, seed=0):
    """A long noisy run with a one-step spike (step 537) and a one-step dip (step 222) in every column."""
    rng = np.random.default_rng(seed)
    steps = np.arange(n)
    y = 1.0 + 0.01 * rng.standard_normal(n)
    y[537], y[222] = 5.0, -3.0
    cols = ["entropy/mean", "length/mean", "kl/k3", "clip/token/binding", "groups/all_correct_frac"]
    return pd.DataFrame({"run": "a", "step": steps, **{c: y for c in cols}})


def test_minmax_thinning_keeps_both_ends_every_spike_and_nan_gaps():
    y = spiky_run()["kl/k3"].to_numpy().copy()
    y[700:760] = np.nan  # a gap (steps not logged) stays a gap
    keep = fcur.minmax_positions(y, 100)
    assert len(keep) <= 100 and keep[0] == 0 and keep[-1] == 999 and {222, 537} <= set(keep)
    assert np.isnan(y[keep]).any() and np.all(np.diff(keep) > 0)
    # no point is lost from sight: each dropped value lies between kept values of its own bucket (49 of 21)
    width = -(-1000 // 49)
    for i in sorted(set(range(1000)) - set(keep) - set(range(700, 760))):
        near = y[keep[(keep >= i // width * width) & (keep < (i // width + 1) * width)]]
        assert np.nanmin(near) <= y[i] <= np.nanmax(near)
    assert list(fcur.minmax_positions(y[:50], 100)) == list(range(50))  # short series: every point


def test_long_curves_are_drawn_thinned_with_their_spikes_at_their_steps():
    f = fcur.prepare(spiky_run(), ["entropy/mean"], alpha=0.0)
    assert len(f) == 1000  # prepare keeps every step; the figures thin each curve for drawing
    line = traces(fcur.line_overlay(f, "entropy/mean", "e"), "a")[0]
    x, y = np.asarray(line.x), np.asarray(line.y)
    assert len(x) <= fcur.MAX_POINTS and x[0] == 0 and x[-1] == 999
    assert y[list(x).index(537)] == 5.0 and y[list(x).index(222)] == -3.0
    assert np.array_equal(y, f["entropy/mean"].to_numpy()[x])  # each point is the step's own value
    f = spiky_run()
    f.loc[f["step"] >= 601, ["entropy/mean", "length/mean"]] = 0.1  # collapses at 601: a step between markers
    v = detect_collapse(f.set_index("step")["entropy/mean"], f.set_index("step")["length/mean"])
    assert v.step == 601
    why = fc.why_figure(f, {"a": v})
    for t in why.data:  # at most WHY_POINTS + the detected step, spikes and the detected step kept (clickable)
        assert len(t.x) <= fc.WHY_POINTS + 1 and {222, 537, 601} <= set(t.x), t.meta
    assert {t.meta for t in why.data if t.mode == "lines+markers"} == {"entropy/mean", "length/mean"}
    assert {s["x0"] for s in why.layout.shapes} == {601}  # marked on every row


def test_line_overlay_has_one_line_per_run_with_band_and_extras():
    fig = fcur.line_overlay(two_runs(), "length/mean", "len", band=("entropy/p10", "entropy/p90"),
                            extra=[("length/p90", "p90")])
    lines = [t for t in fig.data if t.name in ("a", "b")]
    assert [t.name for t in lines] == ["a", "b"]
    assert list(lines[0].y) == list(100.0 + np.arange(10))
    assert any(t.fill == "tonexty" for t in fig.data)  # band
    assert any(t.line.dash == "dot" and t.name == "a p90" for t in fig.data)
    colors = {t.name: t.line.color for t in lines}
    assert colors["a"] != colors["b"]


def test_line_overlay_says_when_a_metric_was_not_recorded():
    fig = fcur.line_overlay(two_runs(), "w/mean", "w")
    assert not fig.data and "not recorded" in fig.layout.annotations[0].text


def test_clip_fractions_draw_outside_dashed_and_binding_solid_per_branch_and_side():
    f = two_runs(3)
    for side in ("low", "high"):
        f[f"clip/token/outside_{side}"] = 0.2
        f[f"clip/token/binding_{side}"] = 0.1
    fig = fcur.clip_fractions(f, ("token", "sequence"))
    assert len(fig.data) == 2 * 2 * 2  # runs × sides × kinds; sequence absent
    by_meta = {(t.meta, t.line.dash) for t in fig.data}
    assert ("clip/token/outside_high", "dash") in by_meta and ("clip/token/binding_low", "solid") in by_meta
    assert fcur.clip_fractions(two_runs(), ("token",)).layout.annotations[0].text.startswith("no data")


def test_entropy_percentiles_plot_their_columns():
    f = two_runs(4).assign(**{"entropy/p50": 0.3, "entropy/p99": 3.0, "entropy/frac_below_0.01": 0.4})
    p = fc.entropy_percentiles(f, "b")
    assert list(traces(p, "p99 (high-entropy minority)")[0].y) == [3.0] * 4
    assert fc.entropy_percentiles(two_runs(), "a").layout.annotations[0].text.startswith("no data")


def test_entropy_split_on_a_two_bin_histogram():
    edges = np.array([0.0, 1.0, 3.0])
    split = fc.entropy_split(edges, np.array([80, 20]), q=0.8)
    assert split.threshold == 1.0
    assert split.mean_low == pytest.approx(0.5) and split.mean_high == pytest.approx(np.sqrt(3.0))
    share = 20 * np.sqrt(3) / (80 * 0.5 + 20 * np.sqrt(3))
    assert split.entropy_share_high == pytest.approx(share)
    assert np.isnan(fc.entropy_split(edges, np.array([0, 0])).threshold)


def test_entropy_split_figure_colours_majority_and_minority():
    e = entropy_edges(50)
    counts = np.zeros(len(e) - 1, int)
    counts[100], counts[300] = 80, 20
    split = fc.entropy_split(e, counts)
    fig = fc.entropy_split_figure(e, counts, split, "t")
    assert [t.name for t in fig.data] == ["low-entropy majority", "high-entropy minority"]
    assert max(fig.data[0].y) == pytest.approx(0.8) and max(fig.data[1].y) == pytest.approx(0.2)


def test_log_ratio_heatmap_normalises_per_step_and_marks_the_trust_region():
    edges = log_ratio_edges(0.8, 1.28, 4, 4)
    c = np.zeros(len(edges) - 1, int)
    c[5] = 10
    hists = {0: (edges, c), 5: (edges, 2 * c), 9: (log_ratio_edges(0.9, 1.1, 4, 4), c)}  # step 9: other edges
    counts, e = fo.heatmap_frame(hists)
    assert list(counts.index) == [0, 5]
    fig = fo.log_ratio_heatmap(counts, e, (0.8, 1.28), "t")
    z = np.asarray(fig.data[0].z, float)
    assert z.shape == (len(edges) - 1, 2) and z[5, 0] == 0.0 and z[5, 1] == 0.0  # log10(1): all in one bin
    assert np.isnan(z[0, 0])
    assert sorted(s["y0"] for s in fig.layout.shapes) == pytest.approx([np.log(0.8), np.log(1.28)])
    assert fo.log_ratio_heatmap(pd.DataFrame(), np.array([]), None, "t").layout.annotations


def test_one_sided_trust_region_draws_only_its_finite_edge():
    edges = log_ratio_edges(None, 1.28, 4, 4)  # CISPO: ε_low = 1, no lower bound
    c = np.zeros(len(edges) - 1, int)
    c[5] = 10
    counts, e = fo.heatmap_frame({0: (edges, c)})
    fig = fo.log_ratio_heatmap(counts, e, (None, 1.28), "t")
    assert [s["y0"] for s in fig.layout.shapes] == pytest.approx([np.log(1.28)])
    assert [a.text for a in fig.layout.annotations] == ["1+ε = 1.28"]
    # Token colours: the open side saturates at the mirrored edge instead of failing on log(0).
    assert token_colors([1 / 1.28, 1.28], "token_ratio", (None, 1.28)) == ["#2166ac", "#b2182b"]


def test_outlier_table_keeps_the_farthest_per_branch_with_context():
    rows = pd.DataFrame({"branch": ["token", "token", "mixed"], "side": "high", "distance": [0.1, 0.9, 0.5],
                         "log_ratio": [0.3, 1.0, 0.7], "binding": True, "token_text": ["x", "y", "z"],
                         "context_left": ["a ", "b ", "c "], "context_right": [" d", None, " f"],
                         "entropy": 0.1, "w": None, "advantage": 1.0, "response_id": 1, "position": 2, "epoch": 0})
    t = fo.outlier_table(rows, ["token"], top=1)
    assert list(t["context"]) == ["b ⟦y⟧"]
    assert t["ratio"].iloc[0] == pytest.approx(np.e)


def test_token_colours_are_diverging_for_ratios_and_grey_when_missing():
    c = token_colors([1.0, 0.8, 1.28, np.nan], "token_ratio", (0.8, 1.28))
    assert c[0] == "#ffffff" and c[1] == "#2166ac" and c[2] == "#b2182b" and c[3] == "#eeeeee"
    assert token_colors([0.0, 1.0], "w") == ["#ffffff", "#1b7837"]
    with pytest.raises(ValueError, match="colour by"):
        token_colors([1.0], "nope")


def test_rollout_html_escapes_text_and_boxes_outside_tokens():
    out = rollout_html(["<b>", "\n", "ok"], [1.5, 1.0, 1.0], "token_ratio", (0.8, 1.28), [True, False, False])
    assert "&lt;b&gt;" in out and "<b>" not in out and "↵<br>" in out
    assert out.count("box-shadow") == 1 and out.count('class="tok"') == 3


def eval_frame():
    rows = []
    for run, algo in (("r1", "dhpo-e"), ("r2", "grpo")):
        for step, acc in ((10, 0.2), (20, 0.4)):
            s = {"benchmarks": {"aime24": {"headline": "avg@32", "avg@32": acc},
                                "gsm8k": {"headline": "avg@1", "avg@1": acc + 0.5}}, "AVG": acc + 0.25}
            rows += fe.summary_rows(s, label=f"{run} · {step}", run=run, algorithm=algo, step=step)
    return pd.DataFrame(rows)


def test_table1_pivots_benchmarks_with_headline_metric_and_avg():
    t = fe.table1(eval_frame())
    assert list(t.columns) == ["aime24 (avg@32)", "gsm8k (avg@1)", "AVG"]
    assert t.loc[("r2 · 20", "grpo")].tolist() == pytest.approx([40.0, 90.0, 65.0])
    assert fe.table1(pd.DataFrame()).empty


def test_accuracy_curve_one_line_per_run():
    fig = fe.accuracy_curve(eval_frame())
    assert [t.name for t in fig.data] == ["r1", "r2"]
    assert list(fig.data[0].x) == [10, 20] and list(fig.data[0].y) == pytest.approx([45.0, 65.0])
    bench = fe.accuracy_curve(eval_frame(), "aime24")
    assert list(bench.data[1].y) == pytest.approx([20.0, 40.0])


def test_problem_views_list_every_sample_with_its_grade():
    recs = [dict(problem_id="p1", sample=s, extracted=str(s % 2), correct=s % 2 == 0, status="ok", reason="r",
                 n_tokens=5, finish_reason="stop") for s in (1, 0, 2)]
    recs += [dict(problem_id="p2", sample=0, extracted=None, correct=False, status="no_answer", reason="none",
                  n_tokens=9, finish_reason="length")]
    ov = fe.problem_overview(recs)
    assert list(ov["problem_id"]) == ["p2", "p1"]  # hardest first
    assert ov.set_index("problem_id").loc["p1", "answers"] == 2
    ps = fe.problem_samples(recs, "p1")
    assert list(ps["sample"]) == [0, 1, 2] and list(ps["correct"]) == [True, False, True]


def test_step_sampling_and_histogram_names():
    steps = list(range(0, 1000))
    shown = sample_steps(steps, 100, 899, n=50)
    assert len(shown) == 50 and shown[0] == 100 and shown[-1] == 899
    assert sample_steps([1, 5, 9], 0, 5) == [1, 5]
    assert log_ratio_names("token", "A<0") == ["log_ratio/token/neg"]
    assert len(log_ratio_names("mixed", "all")) == 3


def test_last_checkpoints_keeps_each_runs_latest_and_outside_evaluations():
    f = pd.concat([eval_frame(), pd.DataFrame(fe.summary_rows(
        {"benchmarks": {"aime24": {"headline": "avg@32", "avg@32": 0.1}}, "AVG": 0.1}, label="base model"))])
    last = fe.last_checkpoints(f)
    assert sorted(last["label"].unique()) == ["base model", "r1 · 20", "r2 · 20"]


def test_the_problem_is_shown_without_its_chat_template():
    # Qwen2.5/Qwen3's ChatML and Llama 3's template, as their tokenizers render a system + user turn.
    qwen = ("<|im_start|>system\nPlease reason step by step.<|im_end|>\n<|im_start|>user\nFind $x$ if $2x=6$."
            "<|im_end|>\n<|im_start|>assistant\n")
    llama = ("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>"
             "user<|end_header_id|>\n\nFind $x$ if $2x=6$.<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
    assert fe.problem_text({"prompt": qwen}) == fe.problem_text({"prompt": llama}) == "Find $x$ if $2x=6$."
    assert fe.problem_text({"prompt": "plain question?"}) == "plain question?"
    assert fe.problem_text({"prompt": qwen, "problem": "From the record"}) == "From the record"


def test_problems_with_equal_accuracy_sort_by_number_not_text():
    recs = [dict(problem_id=p, sample=0, extracted="1", correct=False) for p in ("aime-10", "aime-2", "aime-1")]
    assert list(fe.problem_overview(recs)["problem_id"]) == ["aime-1", "aime-2", "aime-10"]


def test_token_text_contrasts_with_every_cell_and_the_legend_uses_the_same_colours():
    from dhpo_suite.dashboard.figures.tokens import color_legend_html, text_color

    # WCAG 2 contrast ratio >= 4.5 for every colour the scales can produce.
    def lum(c):
        v = [int(c[i:i + 2], 16) / 255 for i in (1, 3, 5)]
        v = [x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in v]
        return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]

    for column, values in (("token_ratio", np.geomspace(0.5, 2.0, 60)), ("entropy", np.linspace(0, 2, 60)),
                           ("w", np.linspace(0, 1, 60))):
        for bg in token_colors(values, column, (0.8, 1.28), 2.0):
            a, b = lum(bg), lum(text_color(bg))
            assert (max(a, b) + 0.05) / (min(a, b) + 0.05) >= 4.5, (column, bg)
    legend = color_legend_html("token_ratio", (0.8, 1.28))
    assert "#2166ac" in legend and "#b2182b" in legend  # the full colours at the trust-region edges


def test_an_entropy_only_collapse_is_marked_on_the_entropy_row_as_the_verdict_says():
    # Issue 30: the verdict said "entropy collapsed at step 187" while the chart had no marker.
    steps = np.arange(60)
    f = pd.DataFrame({"run": "a", "step": steps, "entropy/mean": np.where(steps >= 30, 0.1, 0.8),
                      "length/mean": 100.0})
    v = detect_collapse(f.set_index("step")["entropy/mean"], f.set_index("step")["length/mean"])
    assert verdict(v) == "entropy collapsed at step 30; length held"
    why = fc.why_figure(f, {"a": v})
    assert [(s["x0"], s["yref"], s["line"]["dash"]) for s in why.layout.shapes] == [(30, "y domain", "dot")]
    assert [a.text for a in why.layout.annotations] == ["a: entropy from 30"]
    f["length/mean"] = np.where(steps >= 40, 50.0, 100.0)  # then length too: both onsets and the run's collapse
    v = detect_collapse(f.set_index("step")["entropy/mean"], f.set_index("step")["length/mean"])
    assert verdict(v) == "collapsed at step 40 (entropy from 30, length from 40)"
    why = fc.why_figure(f, {"a": v})
    # the entropy onset on its row; the run's step (= the length onset) on every row
    assert sorted((s["x0"], s["yref"], s["line"]["dash"]) for s in why.layout.shapes) == [
        (30, "y domain", "dot"), (40, "y domain", "dash"), (40, "y2 domain", "dash")]


def test_a_click_on_overlapping_curves_opens_the_run_drawn_on_top():
    # Issue 30: on two runs' coinciding plateaus a click opened the run already on view, not the clicked one.
    f = pd.concat([pd.DataFrame({"run": r, "step": np.arange(20), "entropy/mean": 0.8, "length/mean": 100.0})
                   for r in ("a", "b")], ignore_index=True)
    why = fc.why_figure(f, {})
    ent = {t.name: i for i, t in enumerate(why.data) if t.meta == "entropy/mean"}
    both = [{"curve_number": ent["b"], "x": 5}, {"curve_number": ent["a"], "x": 5}]
    assert fc.clicked(both, why.data) == ("b", 5) and fc.clicked(both[::-1], why.data) == ("b", 5)
    assert fc.clicked([{"curve_number": ent["a"], "x": 7.0}], why.data) == ("a", 7)
    assert fc.clicked([], why.data) is None


def test_x_axes_tokens_seen_and_wall_time_and_the_csv_of_a_chart():
    f = pd.DataFrame({"run": ["a"] * 3 + ["b"] * 2, "step": [1, 2, 3, 1, 2], "tokens/count": [10, 20, 30, 5, 5],
                      "time": [100.0, 160.0, 280.0, 50.0, 110.0], "entropy/mean": [1.0, 0.5, 0.25, 2.0, 1.0]})
    assert fcur.x_values(f, "tokens").tolist() == [10, 30, 60, 5, 10]  # running sum per run
    assert fcur.x_values(f, "time").tolist() == [0, 1, 3, 0, 1]  # minutes since the run's first step
    raw = fcur.prepare(f, ["entropy/mean"], 0.0, (2, 3), "tokens")
    assert raw["x"].tolist() == [30, 60, 10]  # summed over the whole run, then restricted to the range
    smooth = fcur.prepare(f, ["entropy/mean"], 0.5, (1, 3), "step")
    table = fcur.curve_table(fcur.prepare(f, ["entropy/mean"], 0.0, (1, 3)), smooth, ["entropy/mean"], "step", 0.5)
    assert list(table.columns) == ["run", "step", "entropy/mean", "entropy/mean (EMA 0.5)"]
    # debiased EMA, α = 0.5: step 2 of a: (0.5 + 0.5·1.0) / 1.5
    assert table["entropy/mean (EMA 0.5)"].tolist()[:2] == pytest.approx([1.0, 1.0 / 1.5])
    line = fcur.line_overlay(smooth.assign(x=smooth["step"]), "entropy/mean", "e",
                             raw=fcur.prepare(f, ["entropy/mean"]), smoothing=0.5)
    assert [t.name for t in line.data] == ["a raw", "a", "b raw", "b"]


def test_wrong_samples_and_two_evaluations_compared_problem_by_problem():
    def rec(p, s, ok):
        return dict(problem_id=f"b-{p}", sample=s, prompt=fixture_runs.chatml(f"What is {p} + 0?"),
                    extracted=str(p if ok else -p), gold=[str(p)], correct=ok,
                    status="ok", reason="match" if ok else "mismatch", n_tokens=10, finish_reason="stop")

    a = [rec(p, s, s < p) for p in (1, 2, 10) for s in range(4)]  # b-1: 1/4, b-2: 2/4, b-10: 4/4
    b = [rec(p, s, True) for p in (1, 2, 10) for s in range(4)]  # every sample right
    wrong = fe.wrong_samples(a)
    assert list(zip(wrong["problem_id"], wrong["sample"])) == [("b-1", 1), ("b-1", 2), ("b-1", 3), ("b-2", 2),
                                                               ("b-2", 3)]
    assert wrong["gold"].tolist()[0] == "1" and fe.wrong_samples(b).empty
    assert wrong["problem"].tolist()[0] == "What is 1 + 0?"  # the problem as asked, not only its id (issue 43)
    diff = fe.compare_problems(a, b, ("ckpt 10", "ckpt 20"))
    assert diff["problem_id"].tolist() == ["b-1", "b-2", "b-10"]  # largest change first
    assert diff["change"].tolist() == [0.75, 0.5, 0.0] and list(diff.columns)[1:3] == ["accuracy ckpt 10",
                                                                                       "accuracy ckpt 20"]


def test_the_raw_curve_beneath_the_smoothed_one_keeps_its_spikes_in_half_the_points():
    raw = fcur.prepare(spiky_run(), ["entropy/mean"])
    smooth = fcur.prepare(spiky_run(), ["entropy/mean"], alpha=0.9)
    line = fcur.line_overlay(smooth, "entropy/mean", "e", raw=raw, smoothing=0.9)
    r = traces(line, "a raw")[0]
    x, y = list(r.x), np.asarray(r.y)
    assert len(x) <= fcur.MAX_POINTS // 2 and y[x.index(537)] == 5.0 and y[x.index(222)] == -3.0
    assert max(traces(line, "a")[0].y) < 5.0  # the smoothed curve damps the spike; the raw one shows it


def test_panels_drawn_as_one_figure_keep_their_titles_axes_switches_and_notes():
    from dhpo_suite.dashboard.figures.grid import grid

    f = fcur.prepare(two_runs(), ["entropy/mean", "length/mean"])
    panels = [fcur.line_overlay(f, "entropy/mean", "Entropy", legend=False),
              fcur.line_overlay(f, "length/mean", "Length", log_y=True, legend=False),
              fcur.line_overlay(f, "kl/k3", "KL", legend=False)]
    g = grid(panels)
    assert [a.text for a in g.layout.annotations] == ["Entropy", "Length", "KL", "no data:<br>kl/k3 was not recorded"]
    # the note in the empty panel's own area (paper coordinates inside its domains), not on another's axes
    note, x3, y3 = g.layout.annotations[3], g.layout.xaxis3.domain, g.layout.yaxis3.domain
    assert (note.xref, note.yref) == ("paper", "paper") and x3[0] < note.x < x3[1] and y3[0] < note.y < y3[1]
    # each panel's traces on its own y axis, its y title and scale kept; its switch acts on its own y axis only
    assert [(t.name, t.yaxis) for t in g.data] == [("a", "y"), ("b", "y"), ("a", "y2"), ("b", "y2")]
    assert list(traces(g, "b")[1].y) == [100.0 + s for s in range(10)]
    assert g.layout.yaxis2.type == "log" and g.layout.yaxis.type is None and g.layout.yaxis3.visible is False
    # linked: the columns' x axes zoom together, and one hover line runs through the stacked panels
    assert g.layout.xaxis2.matches == "x" and g.layout.hoversubplots == "axis"
    assert g.layout.yaxis2.title.text == "length/mean (tokens)"
    switches = [[b.args[0] for b in menu.buttons] for menu in g.layout.updatemenus]
    assert switches[1] == [{"yaxis2.type": "linear"}, {"yaxis2.type": "log"}] and g.layout.updatemenus[1].active == 1
    assert switches[0] == [{"yaxis.type": "linear"}, {"yaxis.type": "log"}] and len(switches) == 2
    assert g.layout.hovermode == "x unified" and g.layout.showlegend is False


def test_an_empty_panel_beside_full_ones_leaves_their_x_range_alone():
    """Issue 43: the "no data" note of an empty panel stretched the first panel's x axis to -22…30."""
    from dhpo_suite.dashboard.figures.grid import grid

    f = fcur.prepare(two_runs(), ["entropy/mean"])
    g = grid([fcur.line_overlay(f, "entropy/mean", "Entropy", legend=False),
              fcur.empty_figure("Accuracy vs step", "no data: no checkpoint evaluations")])
    assert all(a.xref == "paper" for a in g.layout.annotations)
    assert {t.xaxis for t in g.data} == {"x"}

