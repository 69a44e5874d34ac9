"""Science across seeds: the statistics of `dhpo-suite compare` (compare.py) and the CLI of `dhpo-suite sweep`
and `dhpo-suite compare` (cli.py). No torch: the dashboard imports compare.py."""
