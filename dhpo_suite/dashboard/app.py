"""Streamlit entry point: navigation (each page lives in app_pages/, listed in registry.PAGES), the Plotly.js
preload of warmup.py and the server-side prefetch of prefetch.py."""

import streamlit as st

from dhpo_suite.dashboard import prefetch
from dhpo_suite.dashboard.registry import PAGE_DIR, PAGES
from dhpo_suite.dashboard.warmup import preload_plotly

st.set_page_config(page_title="dhpo-suite", page_icon=":material/monitoring:", layout="wide")
# Denser than Streamlit's default: the padding above the title and beside the page was a fifth of a 1280×800
# screen (issue 43: six Dynamics panels above the fold, the Runs table within the width).
st.html("<style>[data-testid='stMainBlockContainer']{padding:3.2rem 1.5rem 2rem 1.5rem}"
        "[data-testid='stMainBlockContainer'] h1{font-size:1.8rem;padding:0}</style>")
st.navigation([st.Page(PAGE_DIR / p.file, title=p.title, icon=p.icon) for p in PAGES]).run()
preload_plotly()  # after the page: the first chart page of the session then finds Plotly.js loaded
prefetch.schedule_current()  # and, on the server, its figures built
