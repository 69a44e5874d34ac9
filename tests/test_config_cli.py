"""Every option of `train`, `eval`, `sweep` and `compare` is a field of a config dataclass (dhpo_suite.config_cli): the
commands list exactly those fields, with the field's docstring as help, and know which ones the user typed."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest
import typer
from rich.markup import escape
from typer.main import get_command
from typer.testing import CliRunner

from dhpo_suite.cli import app
from dhpo_suite.config_cli import Spell, Values, config_command, field_docs, to_argv
from dhpo_suite.eval.cli import EvalTarget
from dhpo_suite.eval.engine import EngineOptions
from dhpo_suite.eval.runner import EvalSettings
from dhpo_suite.science.cli import CompareArgs
from dhpo_suite.train.cli import TrainCommand
from dhpo_suite.train.sweep_cli import SWEEP_SETS, SweepArgs
from dhpo_suite.testing.load import scaled
from dhpo_suite.train.embedded.config import TrainConfig

COMMANDS = {
    "train": [(TrainConfig, ()), (TrainCommand, ())],
    "eval": [(EvalTarget, ()), (EvalSettings, ()), (EngineOptions, ())],
    "sweep": [(SweepArgs, ()), (TrainConfig, SWEEP_SETS)],
    "compare": [(CompareArgs, ())],
}


def _command(name: str):
    return get_command(app).commands[name]  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", list(COMMANDS))
def test_help_lists_exactly_the_dataclass_fields(name):
    fields = {f.name: cls for cls, skip in COMMANDS[name] for f in dataclasses.fields(cls) if f.name not in skip}
    params = {p.name: p for p in _command(name).params if p.name != "help"}
    assert set(params) == set(fields)
    help_text = " ".join(CliRunner(env={"COLUMNS": "1000"}).invoke(app, [name, "--help"]).output.split())
    for field, cls in fields.items():
        p = params[field]
        doc = field_docs(cls)[field]
        assert p.help.startswith(escape(doc)), (field, p.help)  # type: ignore[attr-defined]
        if not p.hidden:  # type: ignore[attr-defined]
            shown = p.opts[0] if p.opts and p.opts[0].startswith("-") else field.upper()
            assert shown in help_text, field
            assert " ".join(doc.split()[:4]) in help_text, field


def test_a_name_outside_the_registry_is_one_line_naming_the_option():
    result = CliRunner().invoke(app, ["train", "--algo", "ppo"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--algo" in lines[0] and "'ppo' is not one of" in lines[0]
    from dhpo_suite.train.objectives import OBJECTIVES

    assert lines[0].split("is not one of: ")[1].split(" (see")[0].split(", ") == list(OBJECTIVES)


@dataclasses.dataclass(frozen=True)
class _Opts:
    """A small config."""

    size: int = 8
    """How many."""
    name: str | None = None
    """Which one."""
    pairs: dict = dataclasses.field(default_factory=dict)
    """Settings."""


def _probe(got: list) -> typer.Typer:
    def run(ctx: typer.Context, v: Values) -> None:
        got.append(v)

    probe = typer.Typer()
    probe.command("run")(config_command(_Opts, spell={"pairs": Spell(names=("--kv",), repeat=True),
                                                      "size": Spell(names=("-n",))})(run))
    probe.command("other")(lambda: None)
    return probe


def _invoke(*args: str) -> Values:
    got: list = []
    result = CliRunner().invoke(_probe(got), ["run", *args])
    assert result.exit_code == 0, result.output
    return got[0]


def test_given_is_what_the_user_typed_defaults_included():
    """`--resume` and the protocols read this set: a typed default counts, an untouched option does not."""
    v = _invoke("-n", "8", "--kv", "a=1", "--kv", "b=2")
    assert v.given == {"size", "pairs"}
    assert v.of(_Opts) == {"size": 8, "name": None, "pairs": ["a=1", "b=2"]}
    assert _invoke().given == frozenset()


def test_to_argv_gives_back_the_same_values():
    command = get_command(_probe([])).commands["run"]  # type: ignore[attr-defined]
    values = {"size": 3, "name": "x", "pairs": ["a=1", "b=2"]}
    argv = to_argv(command.params, values, keep=lambda n: True)
    assert argv == ["--size", "3", "--name", "x", "--kv", "a=1", "--kv", "b=2"]
    assert command.make_context("run", argv).params == values


@pytest.mark.slow
def test_protocol_defaults_apply_unless_typed(tiny_model_dir, tmp_path):
    """`eval --protocol simplerl` samples at SimpleRL's top-p 0.95 unless --top-p is typed (a typed 1.0 too): the
    real evaluator on the tiny model, as recorded in the results' config.json. This was broken: the typed-or-not
    test compared click's enum with typer's vendored one."""
    from dhpo_suite.eval.protocols import PROTOCOLS

    assert PROTOCOLS["simplerl"].top_p == 0.95
    for extra, top_p in [([], 0.95), (["--top-p", "1.0"], 1.0)]:
        out = tmp_path / f"res-{len(extra)}"
        res = subprocess.run([sys.executable, "-m", "dhpo_suite.cli", "eval", "--bench", "arithmetic", "--model",
                              str(tiny_model_dir), "--limit", "2", "--max-new-tokens", "8", "--grader-workers", "1",
                              "--protocol", "simplerl", "--out", str(out), *extra],
                             capture_output=True, text=True, timeout=scaled(600))
        assert res.returncode == 0, res.stderr[-3000:]
        assert json.loads((out / "config.json").read_text())["top_p"] == top_p


def test_engine_args_are_typed_as_json():
    from dhpo_suite.eval.cli import _engine_args

    assert _engine_args(["enable_prefix_caching=false", "max_num_seqs=4", "quantization=fp8"]) == {
        "enable_prefix_caching": False, "max_num_seqs": 4, "quantization": "fp8"}
    with pytest.raises(ValueError, match="--engine-arg: expected KEY=VALUE"):
        _engine_args(["no-equals"])


def test_a_sweep_continues_whatever_order_or_spelling_the_train_options_had(tmp_path):
    """sweep.json keeps the train options as first typed; the same options typed otherwise are the same sweep."""
    from dhpo_suite.train.sweep_cli import _canonical

    command = _command("sweep")
    ctx = command.make_context("sweep", [str(tmp_path), "-G", "4", "--steps", "2", "--lr", "0.0002"])
    typed = ("--lr", "2e-4", "--steps", "2", "--group-size", "4")
    assert _canonical(ctx, typed) == ("--group-size", "4", "--lr", "0.0002", "--steps", "2")
