"""`--dp N` plumbing: shard specs, worker command lines, GPU slices."""

import sys

import pytest

from dhpo_suite.eval.parallel import gpu_slices, parse_shard, worker_argv


def test_parse_shard():
    assert parse_shard("1/4") == (1, 4)
    for bad in ("4/4", "x", "1/0", "-1/2"):
        with pytest.raises(ValueError, match="--shard"):
            parse_shard(bad)


def test_worker_argv_drops_dp_and_adds_shard_and_resume():
    argv = ["eval", "--bench", "all", "--dp", "4", "--model", "m", "--resume", "--dp=4"]
    assert worker_argv(argv, 2, 4) == [sys.executable, "-m", "dhpo_suite.cli", "eval", "--bench", "all", "--model",
                                       "m", "--shard", "2/4", "--resume"]


def test_gpu_slices(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert gpu_slices(2, 2) == ["0,1", "2,3"]
    assert gpu_slices(4, 1) == ["0", "1", "2", "3"]
    with pytest.raises(ValueError, match="needs 8 GPUs; 4 visible"):
        gpu_slices(4, 2)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_slices(2, 1) == [None, None]  # CPU: every worker shares the cores
