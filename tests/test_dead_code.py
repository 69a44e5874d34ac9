"""No function, method or class in the package that nothing calls (vulture, with the package, the tests and the
benchmarks as its users). Called from outside Python's view, and so told to vulture: the objective and metric
registries' decorators, typer commands, Streamlit's decorators, module `__getattr__` (PEP 562), the forkserver
hook `_launch`, and two files whose every function a framework calls by name: verl's Platform interface
(cpu_platform.py) and lm-eval's task hooks (lm_eval_tasks/utils.py, named in its YAML)."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VULTURE = [sys.executable, "-m", "vulture", "--min-confidence", "60",
           "--exclude", "dhpo_suite/train/verl_backend/cpu_platform.py,dhpo_suite/eval/lm_eval_tasks/utils.py",
           "--ignore-decorators", "@register_objective,@*_metric,@app.command,@app.callback,@st.*",
           "--ignore-names", "__getattr__,_launch"]


def dead(paths: list[str], cwd: Path = ROOT) -> list[str]:
    out = subprocess.run([*VULTURE, *paths], capture_output=True, text=True, cwd=cwd)
    assert out.returncode in (0, 3), out.stderr  # 3: vulture found something
    return [line for line in out.stdout.splitlines()
            if line.startswith("dhpo_suite/") and re.search(r"unused (function|method|class)", line)]


def test_no_function_or_class_is_dead():
    assert dead(["dhpo_suite", "tests", "benchmarks"]) == []


def test_a_dead_function_is_found(tmp_path):
    """The check can fail: a function nobody calls, added to a copy of a module, is reported."""
    pkg = tmp_path / "dhpo_suite"
    pkg.mkdir()
    (pkg / "m.py").write_text("def used():\n    return 1\n\n\ndef forgotten():\n    return 2\n\n\nused()\n")
    assert [line.split(":")[2].strip() for line in dead(["dhpo_suite"], cwd=tmp_path)] == [
        "unused function 'forgotten' (60% confidence)"]
