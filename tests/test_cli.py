import subprocess
import sys


def test_cli_lists_every_part():
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for command in ("train", "eval", "dashboard"):
        assert command in out.stdout
