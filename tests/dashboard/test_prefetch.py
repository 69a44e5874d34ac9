"""The server-side prefetch (dashboard/prefetch.py): after the first page, the chart pages' first views are
already built, so opening them builds nothing; runs still being written are left out."""

from __future__ import annotations

from collections import Counter

import pytest
from tests.dashboard.dash_helpers import no_errors, open_page
from tests.dashboard.fixture_runs import write_run

from dhpo_suite.dashboard import prefetch, views


@pytest.fixture
def builds(monkeypatch) -> Counter:
    """How often each cached view's last step ran (a cache hit runs none of them). The cache keys hold the
    functions' source, not these names, so the counting does not change which entry a call reads."""
    prefetch.wait()  # an earlier test's prefetch must not count here
    counts: Counter = Counter()

    def counting(module, name: str) -> None:
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            counts[name] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    counting(views, "grid")  # Dynamics' panels
    counting(views.fcollapse, "why_figure")  # Entropy collapse
    counting(views.curves, "clip_fractions")  # Clipping's clip fractions (and Dynamics' lazy clip section)
    counting(views.foutliers, "log_ratio_heatmap")  # Clipping's heatmap
    return counts


def test_the_chart_pages_first_views_are_built_before_they_are_opened(tmp_path, monkeypatch, builds):
    write_run(tmp_path / "dhpo-e", steps=30, collapse_at=18)
    write_run(tmp_path / "grpo", steps=30, algo="grpo", seed=1)
    at = open_page(monkeypatch, tmp_path)  # the Runs page; the prefetch starts after it
    prefetch.wait()
    built = dict(builds)
    assert built == {"grid": 1, "why_figure": 1, "clip_fractions": 2, "log_ratio_heatmap": 2}
    for page in ("dynamics.py", "collapse.py", "outliers.py"):
        at.switch_page(f"app_pages/{page}").run()
        no_errors(at)
    at.selectbox(key="outliers_run").set_value("grpo").run()  # the second run's Clipping view
    no_errors(at)
    prefetch.wait()
    assert dict(builds) == built  # every first view was a cache hit


def test_runs_still_being_written_are_left_out(tmp_path, monkeypatch, builds):
    write_run(tmp_path / "done", steps=20)
    write_run(tmp_path / "live", steps=12, close=None, eval_every=0)
    open_page(monkeypatch, tmp_path)
    prefetch.wait()
    # The views of both runs together change with every step of "live": not built. "done"'s own are.
    assert dict(builds) == {"clip_fractions": 1, "log_ratio_heatmap": 1}
