import subprocess
import sys

import pytest

# Importing the CLI (and printing any command's help) must not load these: they cost seconds.
HEAVY = ("torch", "transformers", "pandas", "vllm", "streamlit", "verl")


def test_cli_lists_every_part():
    out = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    for command in ("train", "eval", "dashboard"):
        assert command in out.stdout


@pytest.mark.parametrize("argv", [[], ["train"], ["eval"], ["dashboard"], ["grade"], ["data", "prepare"]],
                         ids=lambda a: " ".join(a) or "top")
def test_help_loads_no_heavy_module(argv):
    """`dhpo-suite [COMMAND] --help` in a fresh interpreter leaves torch, pandas, vLLM, ... unimported."""
    script = (
        "import sys\n"
        "from dhpo_suite.cli import app\n"
        f"try:\n    app({argv + ['--help']!r})\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "Usage" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "LOADED []"
