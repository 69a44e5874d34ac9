"""benchmarks/warm_start_check.py, the path a user runs: the same tree on the same machine gives the same first
supervised steps bit for bit (what makes a difference between two trees or two machines mean something)."""

from __future__ import annotations

from benchmarks.warm_start_check import main


def test_two_calls_agree_bit_for_bit(tmp_path, capsys):
    assert main(["--task", "arithmetic", "--steps", "2", "--save", str(tmp_path / "a.pt")]) == 0
    assert main(["--task", "arithmetic", "--steps", "2", "--against", str(tmp_path / "a.pt")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("0 of ") and "largest by 0" in last, last

