"""Streamlit entry point: navigation (each page lives in pages/, listed in registry.PAGES), the Plotly.js
preload of warmup.py and the server-side prefetch of prefetch.py."""

import streamlit as st

from dhpo_suite.dashboard import prefetch
from dhpo_suite.dashboard.registry import PAGE_DIR, PAGES
from dhpo_suite.dashboard.warmup import preload_plotly

st.set_page_config(page_title="dhpo-suite", page_icon=":material/monitoring:", layout="wide")
st.navigation([st.Page(PAGE_DIR / p.file, title=p.title, icon=p.icon) for p in PAGES]).run()
preload_plotly()  # after the page: the first chart page of the session then finds Plotly.js loaded
prefetch.schedule_current()  # and, on the server, its figures built
