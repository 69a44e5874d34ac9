"""End to end: `dhpo-suite dashboard` headless on a free port, driven in Debian's Chromium with Playwright.

Every page of the registry must render its charts with no Streamlit exception block; screenshots go to
artifacts/dashboard/ (git-ignored). A running run must refresh on its own: a step written while the
Dynamics page is open appears without any interaction. Chromium missing: skipped locally, a failure in CI.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from dhpo_suite.dashboard.registry import PAGES
from dhpo_suite.dashboard.warmup import plotly_chunk, preload_script
from dhpo_suite.runs import RunWriter, StepRecord, read_manifest
from tests.dashboard.fixture_runs import write_run

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "dashboard"
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
CHARTS_DRAWN = """() => {
    const charts = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')];
    return charts.length > 0 && charts.every(c => c.querySelector('.main-svg'));
}"""
LIVE_POINTS = """() => {
    const plot = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
    const t = plot && plot._fullData && plot._fullData.find(d => d.name === 'live');
    return t ? t._length : -1;  // points drawn (data arrays may still be base64 blocks)
}"""

pytestmark = pytest.mark.slow


def require_chromium() -> None:
    if CHROMIUM.is_file():
        return
    message = f"{CHROMIUM} is missing: run `make browser` (Debian's chromium package)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    """The dashboard over two finished runs and one running run; yields (url, runs root)."""
    require_chromium()
    root = tmp_path / "runs"
    write_run(root / "dhpo-e", steps=20, collapse_at=12, eval_every=5)
    write_run(root / "grpo", steps=20, algo="grpo", seed=1, eval_every=0)
    write_run(root / "live", steps=12, close=None, eval_every=0)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "dhpo_suite.cli", "dashboard", str(root), "--headless",
                             "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        first = proc.stdout.readline()
        assert f"http://localhost:{port}" in first, first
        url = f"http://localhost:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/_stcore/health", timeout=2).read()
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, "dashboard did not answer /_stcore/health within 60 s"
                time.sleep(0.2)
        yield url, root
    finally:
        proc.terminate()
        proc.wait(10)


PLOTLY_LOADED = "(chunk) => performance.getEntriesByType('resource').some(e => e.name.endsWith('/' + chunk))"


def wait_usable(page) -> None:
    page.wait_for_selector(IDLE, timeout=60_000)
    page.wait_for_function(CHARTS_DRAWN, timeout=60_000)


def test_every_page_renders_in_chromium_and_live_runs_refresh(server):
    from playwright.sync_api import sync_playwright

    url, root = server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2200})
            page.goto(url)
            for spec in PAGES:
                page.locator('[data-testid="stSidebarNav"] a').filter(has_text=spec.title).click()
                page.get_by_role("heading", name=spec.title, exact=True).wait_for(timeout=60_000)
                if spec.file == "runs.py":  # the only page without a Plotly chart: a table of runs
                    page.wait_for_selector(IDLE, timeout=60_000)
                    page.wait_for_selector('[data-testid="stDataFrame"]', timeout=60_000)
                    # ... on which the app preloads Streamlit's Plotly component (dashboard/warmup.py).
                    page.wait_for_function(PLOTLY_LOADED, arg=plotly_chunk(), timeout=30_000)
                    # ... and draws one throw-away chart off screen with it, then removes it.
                    page.wait_for_function("() => window.__dhpoPlotlyWarm !== undefined", timeout=30_000)
                    assert page.evaluate("() => window.__dhpoPlotlyWarm") is True
                    assert page.locator(".js-plotly-plot").count() == 0
                    assert page.locator('[data-testid="stPlotlyChart"]').count() == 0
                else:
                    wait_usable(page)
                page.screenshot(path=str(ARTIFACTS / f"{Path(spec.file).stem}.png"), full_page=True)
                assert page.locator('[data-testid="stException"]').count() == 0, f"exception on {spec.title}"
                assert page.locator('[data-testid="stAlertContentError"]').count() == 0, f"error on {spec.title}"

            page.locator('[data-testid="stSidebarNav"] a').filter(has_text="Dynamics").click()
            page.get_by_role("heading", name="Dynamics", exact=True).wait_for(timeout=60_000)
            page.wait_for_function(f"({LIVE_POINTS})() === 12", timeout=60_000)
            with RunWriter(root / "live", read_manifest(root / "live"), resume=True, fsync=False) as w:
                w.write_step(StepRecord(12, {"entropy/mean": 0.7, "length/mean": 190.0}))
            page.wait_for_function(f"({LIVE_POINTS})() === 13", timeout=30_000)
            page.screenshot(path=str(ARTIFACTS / "dynamics-live.png"), full_page=True)
        finally:
            browser.close()


def test_this_streamlit_build_has_the_plotly_chunk_the_preload_imports():
    """A Streamlit upgrade that renames its Plotly component fails here instead of silently losing the preload."""
    import streamlit

    chunk = plotly_chunk()
    assert chunk is not None and chunk.startswith("PlotlyChart.")
    assert (Path(streamlit.__file__).parent / "static" / "static" / "js" / chunk).is_file()
    assert chunk in preload_script(chunk)
