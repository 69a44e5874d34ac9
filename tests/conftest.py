"""Shared fixtures for every part's tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run: CI failures reproduce, and nothing flakes.
settings.register_profile("dhpo", derandomize=True, deadline=None)
settings.load_profile("dhpo")


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """A tiny Qwen3 causal LM + local tokenizer (HF directory), built once per test session (~3 s).

    Randomly initialised: it produces text, not answers. Loadable by transformers and vLLM (head_dim 32).
    """
    from dhpo_suite.models.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model"), seed=0)
