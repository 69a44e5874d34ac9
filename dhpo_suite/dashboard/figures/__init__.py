"""Figures: pure frame → figure functions (Plotly); pages call them, tests check their data.

Pages draw them with `st.plotly_chart(..., theme=None)`: Streamlit's theme is merged into every figure in
the browser, which costs ~0.05 s of CPU per chart; a plain white template looks the same and costs nothing.
"""

import plotly.io as pio

pio.templates.default = "plotly_white"
