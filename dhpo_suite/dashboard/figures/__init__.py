"""Figures: pure frame → figure functions (Plotly); pages call them, tests check their data."""
