"""Shared fixtures for every part's tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run: CI failures reproduce, and nothing flakes.
settings.register_profile("dhpo", derandomize=True, deadline=None)
settings.load_profile("dhpo")

# The environment as the user's shell gives it, taken before any test imports vLLM: importing it (tests/eval)
# sets LD_LIBRARY_PATH, KMP_* and other variables in this process, and a child process started with them can
# load other native libraries and compute other floats than this process does.
_USER_ENV = dict(os.environ)


@pytest.fixture(scope="session")
def user_env() -> dict[str, str]:
    """A copy of the environment before any test ran: pass it to subprocesses that must match each other (do not
    modify it: one copy serves the session)."""
    return dict(_USER_ENV)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny Qwen3 causal LM + local tokenizer (HF directory), built once per test session (~3 s).

    Randomly initialised: it produces text, not answers. Loadable by transformers and vLLM (head_dim 32).
    """
    from dhpo_suite.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)


# `make test` spreads the suite over pytest-xdist workers, a test module per unit of work, except the modules that
# share the in-process vLLM engine (tests/eval/conftest.py, package scope): one unit, so the engine is built once.
XDIST_GROUPS = {"tests/eval/test_end_to_end.py": "vllm-engine", "tests/eval/test_new_user.py": "vllm-engine"}
# The longest modules (a minute or more each: real verl launches, training runs, SIGKILL/resume, Chromium) are
# queued first, longest first, so the run ends on short modules. An ordering hint only: a module missing here just
# runs in its place.
XDIST_LONG = ("tests/verl/test_launch.py", "tests/verl/test_plain_verl.py", "tests/verl/test_plugin.py",
              "tests/verl/test_worker.py", "tests/eval/test_cli.py", "tests/train/test_train_run.py",
              "tests/eval/test_trainer_agreement.py", "tests/eval/test_end_to_end.py",
              "tests/benchmarks/test_update_distance.py", "tests/train/test_smollm2.py", "tests/science/test_sweep.py",
              "tests/test_config_cli.py", "tests/verl/test_inputs.py", "tests/train/test_device.py",
              "tests/dashboard/test_browser", "tests/science/test_contrasts.py", "tests/train/test_shared_prompts.py")


def _queue_rank(nodeid: str) -> int:
    """Where the test's unit is queued: the long modules first, longest first, then the rest in file order."""
    return next((i for i, p in enumerate(XDIST_LONG) if nodeid.startswith(p)), len(XDIST_LONG))


def pytest_xdist_make_scheduler(config, log):
    # Our own grouping, not `--dist loadgroup`: xdist 3.8 groups by renaming node ids, which pytest 9 ignores.
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return XDIST_GROUPS.get(nodeid.split("::", 1)[0]) or super()._split_scope(nodeid)

    return GroupScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    if hasattr(config, "workerinput"):  # an xdist worker: every worker sorts alike, so the queue is the same
        items.sort(key=lambda item: _queue_rank(item.nodeid))
    _scale_timeouts(config, items)


def _scale_timeouts(config, items):
    """pytest-timeout's limit (pyproject: 600 s, ample on a quiet machine) times the measured slowdown of this
    machine (dhpo_suite.testing.load), so a test fails on a busy laptop only if it is really stuck. Tests with
    their own timeout marker keep it."""
    base = config.getoption("timeout", None)
    if not base or not items:
        return
    from dhpo_suite.testing.load import slowdown

    factor = slowdown()
    if factor > 1.5:
        for item in items:
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(float(base) * factor))
