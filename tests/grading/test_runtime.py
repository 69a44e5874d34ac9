"""Proof of which ANTLR runtime the workers really use, and that model text never reaches the parent."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from dhpo_suite.grading.runtime import grader_site

GRADING_SRC = Path(__file__).resolve().parents[2] / "dhpo_suite" / "grading"


def _python(code: str, env: dict | None = None) -> str:
    """Run `code` in a fresh interpreter of this environment; its stdout (stderr on failure)."""
    env = {**os.environ, "DHPO_GRADER_WARMUP": "0", **(env or {})}  # start-up speed is not tested here
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout + out.stderr


def test_workers_use_antlr_4_13_2_from_the_grader_site(pool):
    for info in pool.runtime_info():
        assert info["antlr4_version"] == "4.13.2"
        assert Path(info["antlr4_file"]).is_relative_to(grader_site())
        assert info["parser_module"].endswith("antlr4_13_2.PSParser")
        assert info["probe_198_percent"] is True  # raw math-verify: \boxed{198\%} parses and equals 198
    assert pool.grade("\\boxed{198\\%}", "198").correct
    assert not pool.grade("\\boxed{198\\%}", "199").correct


def test_main_environment_keeps_4_9_3_which_fails_the_probe():
    """The difference is real: in the parent's environment the same probe fails."""
    out = _python("""
        from importlib.metadata import version
        from math_verify import LatexExtractionConfig, parse, verify
        config = [LatexExtractionConfig()]
        gold = parse("$198$", extraction_config=config)
        pred = parse("\\\\boxed{198\\\\%}", extraction_config=config)
        print(version("antlr4-python3-runtime"), verify(gold, pred))
    """)
    assert "4.9.3 False" in out


def test_fork_after_parent_imported_4_9_3_still_gives_4_13_2():
    """Worst case: the parent already imported antlr4 4.9.3 and the worker is a plain fork of it."""
    out = _python("""
        import antlr4, math_verify  # 4.9.3, now in sys.modules of the parent
        from dhpo_suite.grading import GraderPool
        if __name__ == "__main__":
            with GraderPool(workers=1, start_method="fork") as pool:
                info = pool.runtime_info()[0]
                print("RESULT", info["antlr4_version"], info["probe_198_percent"], antlr4.__file__)
    """)
    line = next(l for l in out.splitlines() if l.startswith("RESULT"))
    version, probe, parent_file = line.split()[1:]
    assert (version, probe) == ("4.13.2", "True")
    assert "grader-site" not in parent_file  # the parent itself is untouched


def test_missing_grader_site_warns_once_with_the_install_command(tmp_path):
    out = _python("""
        import warnings
        from dhpo_suite.grading import GraderPool
        if __name__ == "__main__":
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                with GraderPool(workers=1) as pool:
                    info = pool.runtime_info()[0]
                GraderPool(workers=1).close()
            print("WARNINGS", len(caught))
            print(caught[0].message)
            print("RUNTIME", info["antlr4_version"])
    """, env={"DHPO_GRADER_SITE": str(tmp_path / "missing")})
    assert "WARNINGS 1" in out
    assert "uv pip install --target .venv/grader-site --no-deps antlr4-python3-runtime==4.13.2" in out
    assert "RUNTIME 4.9.3" in out


def test_parent_never_imports_math_verify_or_sympy():
    out = _python("""
        import sys
        from dhpo_suite.grading import GraderPool, grade
        if __name__ == "__main__":
            with GraderPool(workers=1) as pool:
                assert pool.grade("\\\\boxed{\\\\frac{1}{2}}", "0.5").correct
            assert grade("\\\\boxed{x^2}", "x^{2}").correct
            print("LOADED", sorted(m for m in ("math_verify", "sympy", "antlr4", "latex2sympy2_extended")
                                   if m in sys.modules))
    """)
    assert "LOADED []" in out


def test_no_eval_or_exec_in_the_grader():
    for path in GRADING_SRC.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec", "compile", "__import__"}, path


def test_workers_do_not_rerun_the_callers_main_script(tmp_path):
    script = tmp_path / "caller.py"
    script.write_text(textwrap.dedent("""
        print("MAIN-RAN")  # deliberately unguarded top-level code
        from dhpo_suite.grading import GraderPool
        if __name__ == "__main__":
            with GraderPool(workers=2, timeout=1.0) as pool:
                verdicts = pool.grade_many([("\\\\boxed{10^{10^{10^{10}}}}", "1"), ("\\\\boxed{2}", "2")])
                print("STATUSES", [v.status for v in verdicts])
    """))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "DHPO_GRADER_WARMUP": "0"})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("MAIN-RAN") == 1  # not again in the 2 workers nor in the replacement
    assert "STATUSES ['timeout', 'ok']" in out.stdout
