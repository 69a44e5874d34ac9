"""Streamlit entry point: navigation only (each page lives in pages/, listed in registry.PAGES)."""

import streamlit as st

from dhpo_suite.dashboard.registry import PAGE_DIR, PAGES

st.set_page_config(page_title="dhpo-suite", page_icon=":material/monitoring:", layout="wide")
st.navigation([st.Page(PAGE_DIR / p.file, title=p.title, icon=p.icon) for p in PAGES]).run()
