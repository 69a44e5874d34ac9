"""End to end in Chromium: a link to a page, pasted into a new tab, opens that page set up by app.py.

The bug it guards against: the page scripts lay in a folder named `pages/` beside app.py, which Streamlit runs
as a multipage app of its own until some session has run st.navigation; a deep link opened first after the
server started ran its page script alone (navigation listing file names, no page config, no prefetch). So
every page is opened here by its link, each in a fresh tab, on a server whose root no tab has loaded.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.dashboard.fixture_runs import write_run
from tests.dashboard.test_browser_watch import browsing, open_page

from dhpo_suite.dashboard.registry import PAGES

pytestmark = pytest.mark.slow
NAV = '[data-testid="stSidebarNav"] [data-testid="stSidebarNavLink"]'


def test_each_page_opens_by_its_link_in_a_fresh_tab_with_navigation_and_sidebar(tmp_path):
    root = tmp_path / "runs"
    write_run(root / "dhpo-e", steps=10, collapse_at=6, eval_every=5)
    write_run(root / "grpo", steps=10, algo="grpo", seed=1, eval_every=0)
    with browsing(root) as (url, browser):
        for spec in PAGES:
            page = open_page(browser, url, "/" + Path(spec.file).stem)
            heading = page.locator('[data-testid="stMain"] h1').first
            heading.wait_for(timeout=60_000)
            assert heading.inner_text().startswith(spec.title), (spec.file, heading.inner_text())
            # app.py's navigation, by the registry's titles (Streamlit's own pages/ navigation named the files);
            # a link's text is its icon's name, then its title
            nav = [t.split("\n")[-1] for t in page.locator(NAV).all_inner_texts()]
            assert nav == [p.title for p in PAGES], (spec.file, nav)
            sidebar = page.locator('[data-testid="stSidebar"]')
            sidebar.get_by_text("Runs to compare").wait_for(timeout=60_000)  # widgets' code loads after the page
            assert f"Runs directory: {root}" in sidebar.inner_text(), spec.file
            assert page.locator('[data-testid="stException"]').count() == 0, spec.file
            page.close()
