"""The package's shape (docs/architecture.md), read from the source with `ast`: no import cycles, who may import
whom, and the run-directory layout named only in `dhpo_suite/runs/`.

Every import counts: module level, inside functions and under `if TYPE_CHECKING:` — a cycle through a function
body is still two modules that cannot be understood (or moved) one without the other.
"""

from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "dhpo_suite"

# Cycles that exist today inside directories other engineers are rewriting (issue 17); each is a strongly connected
# component of the module graph, listed whole. Remove an entry once its cycle is gone. Nothing else may cycle.
ALLOWED_CYCLES: list[set[str]] = []

# Run-directory names and globs written outside dhpo_suite/runs/, in directories this change did not edit
# (verl backend, dashboard, sweeps): {file: number of occurrences}. Each should ask runs' API instead
# (runs.format.manifest_path / complete_checkpoints, runs.eval_results.has_samples, runs.list_runs).
# Lower a count (or drop the entry) when its owner routes a use through runs.
ALLOWED_LAYOUT_NAMES = {
    "dhpo_suite/dashboard/data.py": 3,  # mtime of manifest.json, list_runs' walk, a "checkpoints" column name
    "dhpo_suite/train/sweep.py": 2,  # "is the cell's run started" = manifest.json exists
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _owner(name: str) -> str | None:
    """The package module that `import name` loads last: `a.b.c` -> `a.b` when `c` is an attribute of `a.b`."""
    mods = _modules()
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


@cache
def _imports(module: str) -> tuple[frozenset[str], frozenset[str]]:
    """(dhpo_suite modules, top-level third-party names) that `module` imports anywhere in its body."""
    path = _modules()[module]
    here = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    inside, outside = set(), set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(here[: len(here) - node.level + 1] + [node.module or ""]) if node.level else node.module
            base = (base or "").strip(".")
            # `from pkg import sub` imports the submodule `pkg.sub`; `from mod import name` imports `mod`.
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in _modules() else base for a in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] == "dhpo_suite":
                inside.add(_owner(name))
            else:
                outside.add(name.split(".")[0])
    if module == "dhpo_suite.science":
        inside |= _face_modules()
    inside.discard(module)
    inside.discard(None)
    return frozenset(inside), frozenset(outside)


def _graph() -> dict[str, frozenset[str]]:
    return {m: _imports(m)[0] for m in _modules()}


def _face_modules() -> frozenset[str]:
    """The modules behind `dhpo_suite.science`'s face (its FACE dict, loaded by name on first use): the package's
    edges in the graph, which `import` statements alone do not show."""
    tree = ast.parse((PKG / "science" / "__init__.py").read_text(encoding="utf-8"))
    face = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "FACE" for t in n.targets))
    return frozenset(f"dhpo_suite.science.{m}" for m in face.values())


def _cycles(graph: dict[str, frozenset[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph)))
    try:
        for v in graph:
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _area(prefix: str) -> list[str]:
    return [m for m in _modules() if m == prefix or m.startswith(prefix + ".")]


def _reach(starts: list[str]) -> set[str]:
    seen, todo = set(starts), list(starts)
    while todo:
        for w in _imports(todo.pop())[0]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def _imports_outside(prefix: str) -> dict[str, set[str]]:
    """{module of `prefix`: the dhpo_suite modules outside `prefix` it imports}."""
    own = set(_area(prefix))
    return {m: set(_imports(m)[0]) - own for m in own if set(_imports(m)[0]) - own}


# ---- the cycle finder itself, on graphs whose answer is known ----

def test_cycle_finder_finds_known_cycles():
    g = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset({"a"}),
         "e": frozenset({"f"}), "f": frozenset({"e"}), "g": frozenset()}
    assert sorted(map(sorted, _cycles(g))) == [["a", "b", "c"], ["e", "f"]]
    assert _cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


def test_graph_sees_function_level_and_relative_imports():
    # telemetry/state.py imports its siblings relatively; the verl CPU platform imports the seam inside install().
    assert "dhpo_suite.train.telemetry.record" in _imports("dhpo_suite.train.telemetry.state")[0]
    assert "dhpo_suite.train.verl_backend.seam" in _imports("dhpo_suite.train.verl_backend.cpu_platform")[0]


# ---- the rules ----

def test_no_import_cycles():
    unexpected = [sorted(c) for c in _cycles(_graph()) if not any(c <= allowed for allowed in ALLOWED_CYCLES)]
    assert unexpected == [], f"import cycles (function-level imports included): {unexpected}"


def test_objectives_import_nothing_else_of_the_package():
    assert _imports_outside("dhpo_suite.train.objectives") == {}


def test_grading_is_a_leaf():
    # Two ways out, each a leaf that imports nothing of the package: dhpo_suite.jsonl, the package's one JSONL
    # reader (`dhpo-suite grade` reads its rows through it), and runs.safe_write, the one atomic writer (its output).
    leaves = {"dhpo_suite.jsonl", "dhpo_suite.runs.safe_write"}
    outside = {m: out - leaves for m, out in _imports_outside("dhpo_suite.grading").items()}
    assert {m: out for m, out in outside.items() if out} == {}
    assert all(_imports(leaf)[0] == frozenset() for leaf in leaves)


def test_runs_imports_only_itself():
    # The run-directory format imports nothing else of the package (its test fixture, testing.synthetic_runs,
    # lives outside it: it scores simulated tokens with the objective library and the telemetry).
    assert _imports_outside("dhpo_suite.runs") == {}


def test_nothing_in_the_product_imports_the_testing_harnesses():
    # dhpo_suite.testing holds fixtures and harnesses for tests and benchmarks only (issue 28).
    users = {m for area in ("dhpo_suite.runs", "dhpo_suite.train", "dhpo_suite.eval", "dhpo_suite.grading",
                            "dhpo_suite.dashboard", "dhpo_suite.science", "dhpo_suite.tracking", "dhpo_suite.tasks",
                            "dhpo_suite.models")
             for m, out in _imports_outside(area).items() if any(o.startswith("dhpo_suite.testing") for o in out)}
    assert users == set()


def test_telemetry_imports_only_objectives_and_runs():
    allowed = set(_area("dhpo_suite.train.objectives")) | set(_area("dhpo_suite.runs"))
    assert {m: sorted(out - allowed) for m, out in _imports_outside("dhpo_suite.train.telemetry").items()
            if out - allowed} == {}


def test_reductions_live_in_telemetry_and_runs_keeps_the_format():
    # The modules that once held reductions in runs/ stay gone (the numpy twin is the tests' oracle,
    # tests/telemetry/oracle.py); test_runs_imports_only_itself keeps the format free of the telemetry.
    gone = {"dhpo_suite.runs.state", "dhpo_suite.runs.finalize", "dhpo_suite.runs.bins", "dhpo_suite.runs.reference"}
    assert not gone & set(_area("dhpo_suite.runs"))
    assert set(_area("dhpo_suite.train.telemetry")) >= {"dhpo_suite.train.telemetry.state",
                                                         "dhpo_suite.train.telemetry.record"}


def test_training_backends_are_siblings():
    embedded, verl = set(_area("dhpo_suite.train.embedded")), set(_area("dhpo_suite.train.verl_backend"))
    assert not {m for m in embedded if _imports(m)[0] & verl}
    assert not {m for m in verl if _imports(m)[0] & embedded}


def test_dashboard_never_imports_torch_vllm_or_verl():
    # Transitively, through every dhpo_suite module the dashboard's code can import (function bodies included).
    reached = _reach(_area("dhpo_suite.dashboard"))
    heavy = {m: sorted(_imports(m)[1] & {"torch", "vllm", "verl", "transformers"}) for m in reached}
    assert {m: h for m, h in heavy.items() if h} == {}


# ---- the layers: science analyses runs, the dashboard draws, nothing imports the dashboard (issue 45) ----

def test_science_imports_only_runs_and_the_leaves():
    # The analysis layer: pandas, numpy, scipy over run directories (runs/); config_cli for compare's options.
    allowed = set(_area("dhpo_suite.runs")) | {"dhpo_suite.config_cli", "dhpo_suite.jsonl"}
    assert {m: sorted(out - allowed) for m, out in _imports_outside("dhpo_suite.science").items()
            if out - allowed} == {}
    reached = _reach(_area("dhpo_suite.science"))
    assert not {m for m in reached if m.startswith(("dhpo_suite.dashboard", "dhpo_suite.train"))}
    heavy = {m: sorted(_imports(m)[1] & {"torch", "streamlit", "plotly", "vllm", "verl", "transformers"})
             for m in reached}
    assert {m: h for m, h in heavy.items() if h} == {}


def test_science_face_names_what_it_serves():
    import dhpo_suite.science as science

    assert _face_modules() <= set(_modules())
    assert {n: getattr(science, n) for n in science.FACE}  # every public name resolves in its module
    assert "dhpo_suite.science.compare" in _imports("dhpo_suite.science")[0]  # the graph follows the face


def test_nothing_imports_the_dashboard_but_itself_and_the_command_line():
    users = {m for m in _modules() if not m.startswith("dhpo_suite.dashboard")
             and any(i.startswith("dhpo_suite.dashboard") for i in _imports(m)[0])}
    assert users == {"dhpo_suite.cli"}  # registers `dhpo-suite dashboard` (dashboard/cli.py)


def test_the_dashboard_reads_science_through_its_face():
    # The Sweep and collapse pages compute what `dhpo-suite compare` prints with the same functions, named once.
    inner = {m: sorted(i for i in out if i.startswith("dhpo_suite.science."))
             for m, out in _imports_outside("dhpo_suite.dashboard").items()}
    assert {m: i for m, i in inner.items() if i} == {}
    assert "dhpo_suite.science" in _imports("dhpo_suite.dashboard.sweep_stats")[0]


def test_no_module_over_400_lines():
    long = {m: n for m, p in _modules().items() if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}


# ---- the run-directory layout ----

_SAMPLES_GLOB = re.compile(r"\*[^\"']*\.samples|\.samples[^\"']*\*")


def _layout_names(path: Path) -> list[str]:
    """String constants that handle the run layout: a `*.samples*` glob, or `manifest.json` / `checkpoints` as a
    whole string (a path part, a comparison); prose that mentions them (help texts, messages, docstrings) is fine."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    path_like = {id(side) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
                 for side in (n.left, n.right)}
    path_like |= {id(c) for n in ast.walk(tree) if isinstance(n, ast.Compare) for c in [n.left, *n.comparators]}
    path_like |= {id(k) for n in ast.walk(tree) if isinstance(n, ast.Dict) for k in n.keys if k is not None}
    hits = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings:
            if _SAMPLES_GLOB.search(n.value) or n.value == "manifest.json" or \
                    (n.value == "checkpoints" and id(n) in path_like):
                hits.append(n.value)
    return hits


def test_layout_name_finder_sees_the_forms_it_looks_for(tmp_path):
    src = tmp_path / "m.py"
    src.write_text('"""manifest.json in a docstring is fine."""\n'
                   'h = "Run directory (holds manifest.json)."\n'
                   'a = run / "manifest.json"\nb = d.glob("*.samples*.jsonl")\nc = run / "checkpoints"\n'
                   'd = p.name == "checkpoints"\ne = "checkpoints, evals"\n')
    assert _layout_names(src) == ["manifest.json", "*.samples*.jsonl", "checkpoints", "checkpoints"]


def test_run_layout_is_named_only_in_runs():
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not rel.startswith("dhpo_suite/runs/") and (hits := _layout_names(path)):
            found[rel] = len(hits)
    # At most the allow-listed count per file (one that drops its leaks stays green; a new leak fails).
    new = {f: n for f, n in found.items() if n > ALLOWED_LAYOUT_NAMES.get(f, 0)}
    assert new == {}, f"run-directory names outside dhpo_suite/runs/ (ask runs' API instead): {new}"


# ---- verl's internals behind one seam ----

# The seam package (its face, what we patch, what we read) and the CPU-only second seam.
VERL_SEAMS = {"dhpo_suite.train.verl_backend.seam", "dhpo_suite.train.verl_backend.seam.patches",
              "dhpo_suite.train.verl_backend.seam.reads", "dhpo_suite.train.verl_backend.cpu_platform"}
# verl's documented public entry points, which any module of the backend may name: the trainer command the
# launcher runs and the Hydra config tree it composes (docs/verl.md, "What the backend uses of verl").
VERL_PUBLIC = {"verl.trainer.main_ppo", "verl.trainer.config"}


def _verl_module_names(path: Path) -> set[str]:
    """String constants that name a verl module (`"verl.workers.engine_workers"`, as patch targets are named)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and re.fullmatch(r"verl(\.[A-Za-z_]\w*)+", n.value)}


def test_only_the_seam_touches_verls_internals():
    # dhpo_suite.testing stands in for verl's trainer in tests and benchmarks (it drives verl's worker directly).
    assert VERL_SEAMS <= set(_modules()), f"VERL_SEAMS names no module: {sorted(VERL_SEAMS - set(_modules()))}"
    product = [m for m in _modules() if not m.startswith("dhpo_suite.testing")]
    importers = {m for m in product if "verl" in _imports(m)[1]}
    assert importers <= VERL_SEAMS, f"modules importing verl outside the seam: {sorted(importers - VERL_SEAMS)}"
    named = {m: sorted(_verl_module_names(_modules()[m]) - VERL_PUBLIC) for m in product if m not in VERL_SEAMS}
    assert {m: n for m, n in named.items() if n} == {}, "verl module names outside the seam"


def test_the_seam_finder_sees_verl_imports_and_module_names(tmp_path):
    src = tmp_path / "m.py"
    src.write_text('def f():\n    from verl.utils import tensordict_utils\n'
                   'after_import("verl.workers.engine_workers", g)\nh = "verl"\ncmd = "verl.trainer.main_ppo"\n')
    assert _verl_module_names(src) == {"verl.workers.engine_workers", "verl.trainer.main_ppo"}
    assert all("verl" in _imports(f"dhpo_suite.train.verl_backend.seam.{m}")[1] for m in ("patches", "reads"))


def test_nothing_in_the_product_imports_the_test_harnesses():
    users = {m for m in _modules() if not m.startswith("dhpo_suite.testing")
             and any(i.startswith("dhpo_suite.testing") for i in _imports(m)[0])}
    assert users == set()


def test_the_verl_backend_keeps_its_state_in_one_object():
    # state.STATE (one ProcessState) holds what the plugin remembers between verl's calls; no module of the
    # backend rebinds a module global of its own.
    rebinds = {m: [n.names for n in ast.walk(ast.parse(_modules()[m].read_text(encoding="utf-8")))
                   if isinstance(n, ast.Global)] for m in _area("dhpo_suite.train.verl_backend")}
    assert {m: g for m, g in rebinds.items() if g} == {}


# ---- function-level imports: each has a reason (issue 28) ----

# Where a function imports a module of the package although its own module already imports torch at the top: the
# lazy import saves nothing at start-up, so it needs another reason, stated here.
LAZY_FOR_A_REASON = {
    # the plugin runs in every verl process, CUDA ones too; the seam (verl's internals) loads only when the CPU
    # platform is requested
    ("dhpo_suite/train/verl_backend/cpu_platform.py", "dhpo_suite.train.verl_backend.seam"),
}


def _function_level_imports() -> list[tuple[str, ast.ImportFrom | ast.Import, frozenset[str]]]:
    """(file, import statement inside a function, the top-level packages its module imports at module level)."""
    out = []
    for path in _modules().values():
        tree = ast.parse(path.read_text())
        top = frozenset(n.split(".")[0] for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))
                        for n in ([a.name for a in s.names] if isinstance(s, ast.Import) else [s.module or ""]))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out += [(str(path.relative_to(ROOT)), s, top) for n in fn.body for s in ast.walk(n)
                        if isinstance(s, (ast.Import, ast.ImportFrom))]
    return out


def test_no_lazy_import_of_the_package_inside_a_module_that_loads_torch_anyway():
    # A function-level import keeps `dhpo-suite --help` (and the dashboard, the grader) free of torch and the other
    # heavy libraries (tests/test_cli.py checks that). In a module whose top level imports torch it cannot: there it
    # only hides a dependency from the reader (issue 28 counted 20 such in run_setup.py alone).
    lazy = {(f, s.module) for f, s, top in _function_level_imports()
            if "torch" in top and isinstance(s, ast.ImportFrom) and (s.module or "").startswith("dhpo_suite")}
    assert lazy - LAZY_FOR_A_REASON == set()


# The census by kind, each with its reason. Heavy libraries and verl's own dependencies: a light start (`--help`, the
# dashboard, the grader never load what they do not use). Package modules imported lazily by light modules: the same
# reason, one hop removed (they import a heavy library at their top). The standard library and light third-party
# modules (rich, click) have no such reason and go at the top, except these:
HEAVY_LIBRARIES = {"torch", "transformers", "verl", "vllm", "ray", "streamlit", "plotly", "pandas", "pyarrow", "scipy",
                   "numpy", "math_verify", "datasets", "lm_eval", "duckdb", "matplotlib", "psutil", "tensorboard",
                   "wandb", "safetensors", "hydra", "omegaconf", "playwright", "tensordict", "gguf", "huggingface_hub",
                   "sympy", "latex2sympy2_extended", "tokenizers", "transfer_queue", "codetiming"}
LIGHT_FOR_A_REASON = {
    # the grader's ANTLR runtime is the one its own site dir puts first on sys.path, checked when a worker starts
    "dhpo_suite/grading/runtime.py": {"antlr4", "importlib.metadata"},
    "dhpo_suite/runs/lock.py": {"fcntl"},  # POSIX-only: importing runs/ must not fail where it is absent
}


def test_the_function_level_imports_are_counted_by_reason():
    kinds: dict[str, set[tuple[str, str]]] = {"heavy library": set(), "package module": set(), "light": set()}
    for f, s, _top in _function_level_imports():
        name = s.names[0].name if isinstance(s, ast.Import) else s.module or ""
        root = name.split(".")[0]
        kind = ("heavy library" if root in HEAVY_LIBRARIES else
                "package module" if root == "dhpo_suite" or (isinstance(s, ast.ImportFrom) and s.level) else "light")
        kinds[kind].add((f, name))
    assert kinds["light"] == {(f, m) for f, mods in LIGHT_FOR_A_REASON.items() for m in mods}
    assert len(kinds["heavy library"]) > 50  # the census reads the package (a broken walk would find none)
