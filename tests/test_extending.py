"""docs/extending.md's worked examples that no other test runs: a dashboard page, an evaluation benchmark and an
objective, each added by touching the files the doc names and nothing else; the objective's also runs, unedited,
the test files that iterate over every objective. (A setting: tests/objectives/test_registry.py; a step metric:
tests/telemetry/test_metrics.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

import dhpo_suite.dashboard
from dhpo_suite.dashboard import registry
from dhpo_suite.dashboard.controls import RUNS_DIR_ENV
from dhpo_suite.eval import benchmarks
from dhpo_suite.testing.synthetic_runs import write_synthetic_run

NEW_PAGE = '''"""Steps: how many steps each selected run has logged."""

import streamlit as st

from dhpo_suite.dashboard import controls, data

ctx = controls.context()
st.title("Steps")
for run in ctx.selected:
    st.write(f"{run}: {data.scalars(ctx.path(run), data.run_version(ctx.path(run)))[0]['step'].max()} steps logged")
'''


def test_a_new_dashboard_page_is_its_file_plus_one_registry_line(tmp_path, monkeypatch):
    # The package's app_pages/ plus the new file, as the doc's two edits leave them (copied: the package is not
    # edited).
    pages = tmp_path / registry.PAGE_DIR.name
    shutil.copytree(registry.PAGE_DIR, pages, ignore=shutil.ignore_patterns("__pycache__"))
    (pages / "steps.py").write_text(NEW_PAGE)
    app = tmp_path / "app.py"
    shutil.copy(Path(dhpo_suite.dashboard.__file__).with_name("app.py"), app)
    monkeypatch.setattr(registry, "PAGE_DIR", pages)
    monkeypatch.setattr(registry, "PAGES", (*registry.PAGES,
                                            registry.PageSpec("steps.py", "Steps", ":material/123:", "steps per run")))
    runs = tmp_path / "runs"
    write_synthetic_run(runs / "grpo", algo="grpo", steps=5)
    monkeypatch.setenv(RUNS_DIR_ENV, str(runs))
    at = AppTest.from_file(str(app), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page(f"{pages.name}/steps.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Steps"
    shown = " ".join(m.value for m in at.markdown)
    assert "grpo" in shown and "5 steps logged" in shown, shown


def test_a_new_benchmark_is_one_registry_entry(tmp_path, monkeypatch):
    new = benchmarks.Benchmark("svamp", "ChilleD/SVAMP", "test", {"problem": "question", "answer": "answer"},
                               answer="float_to_int")
    monkeypatch.setitem(benchmarks.BENCHMARKS, "svamp", new)
    rows = [{"id": "0", "problem": "Jack has 3 apples and buys 4 more. How many now?", "answer": "7"},
            {"id": "1", "problem": "12 birds, 5 fly away. How many are left?", "answer": "7"}]
    (tmp_path / "svamp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert benchmarks.resolve_benches("svamp,gsm8k") == ["svamp", "gsm8k"]
    assert benchmarks.paper_order(["svamp", "gsm8k"]) == ["gsm8k", "svamp"]  # Table 1's columns first
    problems = benchmarks.load_problems("svamp", data_dir=tmp_path)
    assert [p.gold for p in problems] == [("7",), ("7",)] and problems[0].problem.startswith("Jack")
    assert new.grader == "svamp" and new.samples == 1

    from dhpo_suite.grading import grade  # a benchmark the grader has no policy for gets the default one

    assert grade("So the answer is $\\boxed{7}$.", problems[0].gold, bench="svamp").correct
    assert not grade("So the answer is $\\boxed{8}$.", problems[0].gold, bench="svamp").correct


NEW_OBJECTIVE = '''

@register_objective("reinforce")
def reinforce(
    x: Inputs,
    *,
    adv_scale: float = 1.0,
    loss_agg_mode: str = PAPER_AGG_MODE,
) -> ObjectiveOutput:
    """REINFORCE with the off-policy ratio and no clip: loss = -r·A·adv_scale."""
    r, s = _ratios(x)
    return _output(x, -r * x.adv * adv_scale, loss_agg_mode, token=Branch(r), sequence=Branch(s))
'''

NEW_SETTING_ROW = "| `adv_scale` | reinforce | any | factor on the advantage |\n"

CHECK_OBJECTIVE = '''
import torch
from dhpo_suite.train.embedded.config import TrainConfig
from dhpo_suite.train.objectives import OBJECTIVES, get_objective
from dhpo_suite.train.verl_backend.names import loss_mode
from dhpo_suite.train.verl_backend.registration import policy_losses

assert "reinforce" in OBJECTIVES
TrainConfig(algo="reinforce", hparams={"adv_scale": 2.0}).validate()  # dhpo-suite train --algo reinforce \
--hp adv_scale=2
try:
    TrainConfig(algo="reinforce", hparams={"eps_high": 0.3}).validate()
    raise SystemExit("a setting reinforce does not have was accepted")
except Exception as e:
    assert "eps_high" in str(e), e
assert loss_mode("reinforce") in policy_losses()  # verl: actor.policy_loss.loss_mode=dhpo_suite.reinforce
lp = torch.randn(2, 5, requires_grad=True)
out = get_objective("reinforce", adv_scale=2.0)(lp, lp.detach() - 0.1, torch.tensor([1.0, -1.0]),
                                               torch.ones(2, 5, dtype=torch.bool))
out.loss.backward()
assert torch.isfinite(lp.grad).all() and lp.grad.abs().sum() > 0
print("ok")
'''


@pytest.mark.slow  # a copy of the package and of the tests, two fresh interpreters with torch and verl
def test_a_new_objective_is_one_registered_function(tmp_path):
    # docs/extending.md, "An objective": one decorated function appended to a copy of losses.py, nothing else;
    # the embedded trainer's config, --hp, the objective library and verl's loss registry all take it.
    import subprocess
    import sys

    import dhpo_suite as pkg

    root = Path(pkg.__file__).parents[1]
    copy = tmp_path / "dhpo_suite"
    shutil.copytree(root / "dhpo_suite", copy, ignore=shutil.ignore_patterns("__pycache__"))
    losses = copy / "train" / "objectives" / "losses.py"
    losses.write_text(losses.read_text() + NEW_OBJECTIVE)
    env = {**__import__("os").environ, "PYTHONPATH": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", CHECK_OBJECTIVE], cwd=tmp_path, capture_output=True, text=True,
                         env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]
    # The test files the doc says need no edit pass, unedited, on the package with the new objective: those that
    # run every registered objective (settings, output, config, one update) and the presets' Appendix D check.
    shutil.copytree(root / "tests", tmp_path / "tests", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "pyproject.toml", tmp_path)
    (tmp_path / "docs").mkdir()
    doc = (root / "docs" / "objectives.md").read_text()  # and the doc's one edit: the setting's row
    table = "| setting | objectives | allowed | meaning |\n|---|---|---|---|\n"
    assert table in doc
    (tmp_path / "docs" / "objectives.md").write_text(doc.replace(table, table + NEW_SETTING_ROW))
    suite = ["tests/objectives/test_registry.py", "tests/objectives/test_output.py", "tests/train/test_config.py",
             "tests/train/test_update.py",
             "tests/verl/test_presets.py::test_every_objective_of_appendix_d_is_registered"]
    out = subprocess.run([sys.executable, "-m", "pytest", *suite, "-v", "-p", "no:cacheprovider",
                          "-k", "reinforce or appendix_d"], cwd=tmp_path, capture_output=True, text=True, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-3000:]
    ran = {line.split("::")[0] for line in out.stdout.splitlines() if "reinforce" in line and "PASSED" in line}
    assert ran == set(suite[:4]), out.stdout[-3000:]  # each file ran the new objective
