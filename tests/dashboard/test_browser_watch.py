"""End to end in Chromium at 1280×800 (issue 43): the screen a researcher watches while a sweep trains.

Dynamics over runs without a checkpoint evaluation (every run while it trains): the empty accuracy panel
leaves the entropy panel's x range alone, six panels lie above the fold, one hover runs through a column's
panels and a zoom moves every panel. A run started mid-session in a picked run's folder joins the picked runs
and recolours no other run; the sidebar chips carry the line colours. A scalars file damaged in place shows
its warning on the next load. The Sweep page: "Compare all" draws every group, paired differences only
between groups one setting apart, no Python None, the view in the URL; the Runs table within the screen.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from tests.dashboard.fixture_runs import write_lr_sweep, write_run
from tests.dashboard.test_browser import (ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, FIND, IDLE, POINT, dashboard,
                                          require_chromium, settle, wait_usable)
from tests.dashboard.test_browser_compare import CURVE_N, TABLE

pytestmark = pytest.mark.slow
SCREEN = {"width": 1280, "height": 800}
PANELS = """() => {  // per panel of the Dynamics figure: title, plot area's bottom on the page, x range
    const gd = document.querySelector('.js-plotly-plot'), r = gd.getBoundingClientRect(), L = gd._fullLayout;
    const n = Object.keys(gd.layout).filter(k => /^yaxis\\d*$/.test(k)).length;
    return gd.layout.annotations.slice(0, n).map((a, i) => {
        const key = i ? `yaxis${i + 1}` : 'yaxis', y = L[key];
        if (!y) return {title: a.text, x: null,  // a panel without data: Plotly makes no axis for it
                        bottom: r.top + L._size.t + (1 - gd.layout[key].domain[0]) * L._size.h};
        return {title: a.text, bottom: r.top + y._offset + y._length, x: L[y.anchor.replace('x', 'xaxis')].range};
    });
}"""
CHIPS = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stSidebar"] span[data-tag]')]
    .map(t => [t.getAttribute('aria-label'), [getComputedStyle(t).backgroundColor, t.innerText.trim()]]))"""
LINES = f"""(title) => {{  // {{run: line colour}} of the panel titled so
    const [gd, , y] = ({FIND})(title);
    return Object.fromEntries(gd._fullData.filter(t => t.yaxis === y && !t.name.includes(' '))
        .map(t => [t.name, t.line.color]));
}}"""


def rgb(hex_color: str) -> str:
    h = hex_color.lstrip("#")
    return "rgb({}, {}, {})".format(*(int(h[i:i + 2], 16) for i in (0, 2, 4)))


@contextlib.contextmanager
def browsing(root: Path):
    """The dashboard over `root` and a headless Chromium: yields (url, browser)."""
    from playwright.sync_api import sync_playwright

    require_chromium()
    with dashboard(root) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield url, browser
        finally:
            browser.close()


def open_page(browser, url: str, path: str):
    """A fresh tab opened straight at `url + path`, as a researcher pastes a link (test_browser_links.py checks
    that such a first load is the page, set up by app.py)."""
    page = browser.new_page(viewport=SCREEN)
    page.goto(url + path)
    page.wait_for_selector(IDLE, timeout=60_000)
    return page


def test_dynamics_while_a_sweep_grows(tmp_path):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    root = tmp_path / "runs"
    for seed in (0, 2):  # no checkpoint evaluation: the accuracy panel is empty
        write_run(root / "sweep" / f"grpo-s{seed}", steps=20, algo="grpo", seed=seed, eval_every=0)
    write_run(root / "other" / "dhpo-e", steps=20, eval_every=0)
    with browsing(root) as (url, browser):
        page = open_page(browser, url, "/dynamics?runs=sweep/grpo-s0,sweep/grpo-s2")
        wait_usable(page)
        panels = {p["title"]: p for p in page.evaluate(PANELS)}
        entropy = panels["Token entropy: p10–p90 band"]
        assert entropy["x"][0] >= -1 and entropy["x"][1] <= 20, entropy  # was -22…30
        assert "Accuracy vs step" in panels and page.get_by_text("no checkpoint evaluations").count() == 1
        above = [t for t, p in panels.items() if p["bottom"] <= SCREEN["height"]]
        assert len(above) >= 6, (above, panels)
        page.screenshot(path=str(ARTIFACTS / "dynamics-1280x800.png"))

        # One hover through the column's panels: hovering entropy lists the reward panel's runs too.
        box = page.locator(".js-plotly-plot").first.bounding_box()
        page.mouse.move(box["x"] + 150, box["y"] + 120)
        page.wait_for_function("() => [...document.querySelectorAll('.hoverlayer')]"
                               ".some(h => h.textContent.includes('entropy/mean'))", timeout=30_000)
        text = page.evaluate("() => [...document.querySelectorAll('.hoverlayer')].map(h => h.textContent)"
                             ".join(' ')")
        assert "reward/mean" in text and "kl/k3" in text, text
        # A zoom of one panel moves every panel (linked x axes).
        x0, y0 = box["x"] + 110, box["y"] + 100
        page.mouse.move(x0, y0)
        page.mouse.down()
        page.mouse.move(x0 + 60, y0, steps=5)
        page.mouse.up()
        page.wait_for_function(f"() => ({PANELS})()[0].x[1] < 15", timeout=30_000)
        ranges = {tuple(round(v, 3) for v in p["x"]) for p in page.evaluate(PANELS) if p["x"]}
        assert len(ranges) == 1, ranges

        # Colours: recorded, then a run that sorts first starts in the picked runs' folder.
        page.reload()
        wait_usable(page)
        before = page.evaluate(LINES, "Token entropy")
        chips = page.evaluate(CHIPS)
        assert {r: c for r, (c, _) in chips.items()} == {r: rgb(c) for r, c in before.items()}
        assert chips["sweep/grpo-s2"][1] == "sweep/grpo-s2"  # the whole name, seed included
        time.sleep(1.1)  # a later start time (seconds): it claims its colour after the others
        write_run(root / "sweep" / "a-grpo-s1", steps=20, algo="grpo", seed=1, eval_every=0)
        page.wait_for_function("() => [...document.querySelectorAll('[data-testid=\"stSidebar\"] span[data-tag]')]"
                               ".some(t => t.getAttribute('aria-label') === 'sweep/a-grpo-s1')", timeout=60_000)
        settle(page)
        wait_usable(page)
        page.wait_for_function(f"() => 'sweep/a-grpo-s1' in ({LINES})('Token entropy')", timeout=60_000)
        after = page.evaluate(LINES, "Token entropy")
        assert {r: after[r] for r in before} == before and after["sweep/a-grpo-s1"] not in before.values()
        assert "other/dhpo-e" not in after  # a run of another folder does not join
        chips = page.evaluate(CHIPS)
        assert chips["sweep/a-grpo-s1"][0] == rgb(after["sweep/a-grpo-s1"])

        # Damage written in place: the truncated scalars file is named on the next load.
        parquet = root / "sweep" / "grpo-s0" / "scalars" / "scalars.parquet"
        parquet.write_bytes(parquet.read_bytes()[:64])
        page.reload()
        page.wait_for_selector(IDLE, timeout=60_000)
        page.get_by_text("scalars.parquet", exact=False).first.wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "dynamics-damaged.png"), full_page=True)


def test_sweep_compare_all_pairs_one_setting_apart_and_runs_table_fits(tmp_path):
    root = tmp_path / "runs"
    write_lr_sweep(root)
    with browsing(root) as (url, browser):
        page = open_page(browser, url, "/")
        scroller = page.locator('[data-testid="stDataFrame"] .dvn-scroller').first
        scroller.wait_for(timeout=60_000)
        assert scroller.evaluate("e => e.scrollWidth <= e.clientWidth"), "Runs table wider than the screen"

        page = open_page(browser, url, "/sweep?runs=lr-small/grpo-s0,lr-small/dhpo-e-s0")
        page.wait_for_selector('[data-testid="stTable"]', timeout=60_000)
        assert sorted(page.evaluate(TABLE, 0)["n"]) == ["dhpo-e", "grpo"]
        page.get_by_role("button", name="Compare all 12").click()
        page.wait_for_function(f"() => Object.keys(({TABLE})(0)['n']).length === 4", timeout=60_000)
        settle(page)
        groups = sorted(page.evaluate(TABLE, 0)["n"])
        page.wait_for_function(f"() => Object.keys(({CURVE_N})('Held-out reward across seeds')).length === 4",
                               timeout=60_000)
        assert sorted(page.evaluate(CURVE_N, "Held-out reward across seeds")) == groups
        # Paired differences against grpo · lr=0.0001: only the groups one setting apart, each naming it.
        diffs = page.evaluate(TABLE, 1)
        assert diffs["differs in"] == {"dhpo-e · lr=0.0001": "algorithm", "grpo · lr=0.002": "lr"}, diffs
        assert page.get_by_text("Not paired with grpo · lr=0.0001: dhpo-e · lr=0.002", exact=False).count() == 1
        cells = page.evaluate("() => [...document.querySelectorAll('[data-testid=\"stTable\"] td')]"
                              ".map(c => c.innerText)")
        assert not [c for c in cells if "None" in c or ".000 [" in c], cells
        summary = page.evaluate(TABLE, 0)
        assert all(v.startswith("never collapsed") for v in summary["collapse_step"].values()), summary
        assert "baseline=" in page.url
        # The view in the URL: a reload keeps the baseline chosen.
        box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Paired differences against")
        box.click()
        page.get_by_role("option", name="dhpo-e · lr=0.0001", exact=True).click()
        page.wait_for_function("() => decodeURIComponent(location.search.replace(/\\+/g, ' '))"
                               ".includes('baseline=dhpo-e · lr=0.0001')", timeout=60_000)
        page.reload()
        page.wait_for_selector('[data-testid="stTable"]', timeout=60_000)
        settle(page)
        page.get_by_text("Paired difference vs dhpo-e · lr=0.0001", exact=False).wait_for(timeout=60_000)
        page.screenshot(path=str(ARTIFACTS / "sweep-compare-all.png"), full_page=True)


def test_step_view_scrolls_into_view_and_views_keep_their_state(tmp_path):
    root = tmp_path / "runs"
    write_run(root / "dhpo-e", steps=20, collapse_at=12, eval_every=5)
    write_run(root / "grpo", steps=20, algo="grpo", seed=1, eval_every=0)
    with browsing(root) as (url, browser):
        # A clicked point's step view opens below the chart and is brought on screen.
        page = open_page(browser, url, "/collapse")
        wait_usable(page)
        x, y = page.evaluate(POINT, ["Collapse: when and why", "dhpo-e", "entropy/mean", 15])
        page.mouse.click(x, y)
        page.wait_for_function("() => location.search.includes('step=15')", timeout=60_000)
        settle(page)
        summary = page.locator("summary").filter(has_text="The tokens and responses of a step")
        page.wait_for_function("(s) => { const e = [...document.querySelectorAll('summary')]"
                               ".find(e => e.innerText.includes(s)), r = e && e.getBoundingClientRect();"
                               " return !!r && r.top > -2 && r.bottom <= innerHeight; }",  # at the top: 0, give or take
                               arg="The tokens and responses of a step", timeout=30_000)
        assert summary.count() == 1

        # Outliers without gradient can be hidden (fixture: response 1 of each branch has advantage 0).
        page = open_page(browser, url, "/outliers?run=dhpo-e")
        wait_usable(page)
        page.get_by_text("Only tokens that carry gradient").click()
        page.get_by_text("3 outlier tokens without gradient hidden").wait_for(timeout=60_000)

        # Dynamics: the runs' seeds averaged per group, on request and in the URL.
        page = open_page(browser, url, "/dynamics")
        wait_usable(page)
        page.get_by_text("Mean across seeds").click()
        page.wait_for_function("() => location.search.includes('group=1')", timeout=60_000)
        page.wait_for_function(f"() => ({FIND})('Token entropy: mean, 95 % band')[0] !== null", timeout=60_000)
        assert "dhpo-e" in page.locator(".run-legend").inner_text()

        # Evaluation: the view in the URL; a reload opens the same wrong-samples list.
        page = open_page(browser, url, "/evaluation")
        page.get_by_text("Wrong samples only").click()
        page.wait_for_function("() => location.search.includes('wrong=1')", timeout=60_000)
        page.reload()
        page.wait_for_selector(IDLE, timeout=60_000)
        page.get_by_text("samples graded wrong", exact=False).wait_for(timeout=60_000)
