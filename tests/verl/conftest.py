"""Fixtures of the real verl launches (test_launch.py, test_plain_verl.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.verl.launches import prepare_data


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    """verl's Parquet of launches.PROBLEMS (train.parquet: 2 problems, val.parquet: 1)."""
    return prepare_data(tmp_path_factory.mktemp("verl-data"))
