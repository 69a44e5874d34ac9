"""Science across seeds (docs/sweep.md), the analysis layer under `dhpo-suite compare` and the dashboard.

compare.py: per-run metrics and per-label t-intervals; stats.py: the paired statistics (t, sign-flip, Holm, TOST,
P(improvement), power); prereg.py: the pre-registration file and its digest check; checks.py: the manipulation
checks; contrasts.py: pre-registered contrasts and verdicts; analysis.py: one comparison read once; collapse.py:
the entropy-collapse detector; groups.py: which runs may be averaged together; kept.py: the committed kept-data
folder; tables.py: formatting; cli.py: `dhpo-suite sweep` and `dhpo-suite compare`; update_distance.py: the
one-step update-distance probe. No torch outside update_distance.py: the dashboard imports compare.py."""
