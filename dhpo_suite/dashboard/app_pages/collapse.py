"""Did it collapse, when, why: the detector's verdict per run; entropy, length, binding clip per branch, KL and
groups without signal on one shared step axis with the collapse step marked; a clicked step opens, below, that
step's outlier tokens and responses (a section drawn only when open, where a step can also be typed), or the
run's entropy percentiles."""

import json

import pandas as pd
import streamlit as st
import streamlit.components.v1 as components

from dhpo_suite.dashboard import controls, data, frames, viewer, views
from dhpo_suite.science import CollapseRule, verdict
from dhpo_suite.dashboard.figures import collapse as fig
from dhpo_suite.dashboard.figures.curves import prepare

ctx = controls.context()
st.title("Entropy collapse")
if not ctx.selected:
    st.info("Pick one or more runs in the sidebar.")
    st.stop()
with st.expander("Collapse rule (see docs/dashboard.md)"):
    c1, c2, c3 = st.columns(3)
    rule = CollapseRule(
        entropy_drop=c1.slider("entropy drop", 0.05, 0.95, CollapseRule.entropy_drop, 0.05, key="rule_h"),
        length_drop=c2.slider("length drop", 0.05, 0.95, CollapseRule.length_drop, 0.05, key="rule_l"),
        patience=c3.number_input("patience (steps)", 1, 100, CollapseRule.patience, key="rule_p"),
    )
    st.caption("Plateau: median of the first 10 % of steps. Collapse: the centred 5-step median stays below "
               "(1 − drop) × plateau for `patience` steps; the run collapses when entropy and length both have.")

@st.fragment(run_every=ctx.refresh)
def detector() -> None:
    frame, problems = frames.scalars_frame(ctx)
    controls.show_problems(problems)
    verdicts, why = views.collapse_view(ctx, rule)
    def text(value, fmt: str = "d") -> str:  # "—", not Python's None, where a series did not collapse
        return "—" if value is None or value != value else format(value, fmt)

    st.dataframe(pd.DataFrame({r: {"verdict": verdict(v), "collapse step": text(v.step),
                                   "entropy collapse": text(v.entropy.step),
                                   "entropy plateau": text(v.entropy.plateau, ".4g"),
                                   "length collapse": text(v.length.step),
                                   "length plateau": text(v.length.plateau, ".4g")} for r, v in verdicts.items()}).T,
                 key="collapse_table")
    event = st.plotly_chart(why, key="collapse_why", theme=None, on_select="rerun", selection_mode="points")
    points = event.selection.points if event is not None else []
    click = tuple((p.get("curve_number"), p.get("x")) for p in points)
    if click and click != st.session_state.get("_collapse_click"):  # a new click: open that step below
        st.session_state["_collapse_click"] = click
        hit = fig.clicked(points, why.data)
        if hit is not None and hit[0] in ctx.selected:
            st.session_state["collapse_run"], st.session_state["collapse_step_box"] = hit
            st.session_state["collapse_step_open"] = True
            st.session_state["_collapse_scroll"] = hit  # the view opens below the fold: bring it on screen
            st.rerun(scope="app")  # the step view lies outside this live fragment


detector()

if controls.url_param("step") and "collapse_step_open" not in st.session_state:  # a shared link to a step
    st.session_state["collapse_step_open"] = True


@st.fragment  # a step or tab change redraws only this part, not the chart above
def step_view() -> None:
    # Drawn only when opened (a lazy expander), as a click on the chart does: the outlier table and the coloured
    # responses below the fold were a quarter to a third of the page's browser CPU (benchmarks/RESULTS.md,
    # issue 30, session 14).
    box = st.expander(f"{STEP_VIEW} (click a point of the entropy or length row to open it at that step)",
                      key="collapse_step_open", on_change="rerun")
    if not box.open:
        controls.set_url(step=None, run=None)
        return
    with box:
        step_body()


STEP_VIEW = "The tokens and responses of a step"
SCROLL = """<script>  // the page's expander whose summary holds the text, scrolled to the top of the screen, again
// for 2 s after it first appears (the charts above it may still be laying out)
const want = %s, t0 = Date.now();
let seen = 0;
(function go() {
  const hit = [...window.parent.document.querySelectorAll('summary')].find(s => s.innerText.includes(want));
  if (hit) { hit.scrollIntoView({block: 'start'}); seen = seen || Date.now(); }
  if (Date.now() - t0 < 8000 && (!seen || Date.now() - seen < 2000)) setTimeout(go, 200);
})();
</script>"""


def scroll_into_view(text: str, click: str) -> None:
    """Scroll the page to the expander whose label starts with `text` (a clicked step's view opened below the
    fold, issue 43) after `click` ("run@step"): a zero-height component whose script reaches its parent page (same
    origin)."""
    components.html(SCROLL % json.dumps(text) + f"<!-- {click} -->", height=0)  # a new click: a new script run


def step_body() -> None:
    run = st.selectbox("Run", ctx.selected, key="collapse_run")
    frame, _ = frames.scalars_frame(ctx, [run])
    steps = [int(s) for s in frame["step"]]
    if not steps:
        return
    step = controls.step_picker(steps, "collapse_step")
    if st.session_state.get("_collapse_scroll") == (run, step):  # opened by a click on the chart
        # Drawn on every rerun while the clicked step is on view: unchanged, the component keeps its frame and
        # its script runs once; popped after one run, a rerun right after the click removed it before it ran.
        scroll_into_view(STEP_VIEW, f"{run}@{step}")
    controls.set_url(run=run)
    branches = [b for b in ("token", "sequence", "mixed") if f"ratio/{b}/mean" in frame.columns]
    # A choice, not tabs: tabs draw every panel (hidden ones too); this draws only the one on view.
    view = st.segmented_control("Show", ["Tokens and responses", "Entropy percentiles"], key="collapse_view",
                                default="Tokens and responses")
    if view != "Entropy percentiles":
        st.markdown("**Outlier tokens**")
        viewer.outlier_rows(ctx, run, step, branches, "collapse_outliers")
        st.markdown("**Sampled responses**")
        viewer.responses(ctx, run, step, "collapse_responses")
        return
    pct = prepare(frame, ["entropy/p10", "entropy/p50", "entropy/p90", "entropy/p99", "entropy/frac_below_0.01"])
    st.plotly_chart(fig.entropy_percentiles(pct, run), key="collapse_pct", theme=None)
    q = st.slider("majority share", 0.5, 0.99, 0.8, 0.01, key="collapse_q")
    hists, probs = data.histograms(ctx.path(run), [step], ["entropy"])
    controls.show_problems(probs)
    if step in hists:
        edges, counts = hists[step]
        split = fig.entropy_split(edges, counts, q)
        st.plotly_chart(fig.entropy_split_figure(edges, counts, split, f"Token entropy at step {step}"),
                        key="collapse_split", theme=None)
        if split.mean_high == split.mean_high:  # not NaN: some tokens lie above the split
            st.caption(f"The top {1 - q:.0%} of tokens (entropy > {split.threshold:.3g} nats) average "
                       f"{split.mean_high:.3g} nats and carry {split.entropy_share_high:.0%} of the step's entropy; "
                       f"the other {q:.0%} average {split.mean_low:.3g} nats.")
        else:
            st.caption(f"Every token at step {step} has entropy ≤ {split.threshold:.3g} nats: no high-entropy "
                       "minority is left (collapsed).")


step_view()
