"""An objective's settings are its keyword-only parameters: one name each, resolved and checked once, on every
surface (get_objective, `dhpo-suite train --hp` and the named flags, verl's `policy_loss.hparams`)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Literal

import pytest
import torch

from dhpo_suite.train.objectives import OBJECTIVES, PAPER_AGG_MODE, get_objective
from dhpo_suite.train.objectives import registry
from dhpo_suite.train.objectives.registry import (
    HparamError,
    default_hparams,
    hparam_names,
    parse_hparams,
    resolve_hparams,
)
from tests.objectives.batches import make_batch

DOCS = Path(__file__).resolve().parents[2] / "docs" / "objectives.md"


@pytest.mark.parametrize("name", OBJECTIVES)
def test_settings_are_the_signature(name):
    base = registry.ALIASES.get(name, (name, {}))[0]
    params = inspect.signature(registry._REGISTRY[base]).parameters.values()
    assert hparam_names(name) == tuple(p.name for p in params if p.kind is p.KEYWORD_ONLY)
    assert get_objective(name).hparams == default_hparams(name) == resolve_hparams(name)


@pytest.mark.parametrize("name", OBJECTIVES)
def test_every_setting_is_documented(name):
    """docs/objectives.md, "Settings": one line per keyword (a new setting = the objective + this line)."""
    text = DOCS.read_text()
    section = text[text.index("## Settings"):]
    section = section[:section.index("\n## ", 4)] if "\n## " in section[4:] else section
    documented = set(re.findall(r"^\| `(\w+)` \|", section, re.M))
    assert set(hparam_names(name)) <= documented, set(hparam_names(name)) - documented


@pytest.mark.parametrize("name", OBJECTIVES)
def test_text_round_trip(name):
    """What `--hp key=value` parses is what the objective takes, typed by its annotations."""
    defaults = default_hparams(name)
    assert parse_hparams(name, [f"{k}={v}" for k, v in defaults.items()]) == defaults


@pytest.mark.parametrize("name, given, key, message", [
    ("grpo", {"mixing": "avg"}, "mixing",
     "objective 'grpo' has no hyper-parameter 'mixing'; it takes: eps_low, eps_high, dual_clip, loss_agg_mode"),
    ("grpo", {"eps_low": "0.1"}, "eps_low", "objective 'grpo': eps_low='0.1' must be a number"),
    ("grpo", {"eps_high": True}, "eps_high", "objective 'grpo': eps_high=True must be a number"),
    ("grpo", {"dual_clip": "x"}, "dual_clip", "objective 'grpo': dual_clip='x' must be a number or None"),
    ("grpo", {"dual_clip": 0.0}, "dual_clip", "objective 'grpo': dual_clip=0.0 must be > 0"),
    ("dhpo", {"clip": 1}, "clip", "objective 'dhpo': clip=1 must be a string"),
    ("dhpo", {"avg_weight": 1.5}, "avg_weight", "objective 'dhpo': avg_weight=1.5 must be <= 1"),
    ("dhpo", {"seq_eps_low": 2.0}, "seq_eps_low", "objective 'dhpo': seq_eps_low=2.0 must be <= 1: its trust"),
    ("dhpo", {"seq_eps_high": -0.1}, "seq_eps_high", "objective 'dhpo': seq_eps_high=-0.1 must be a number >= 0"),
    ("dhpo-a", {"mixing": "entropy"}, "mixing", "objective 'dhpo-a': mixing='entropy' contradicts the name"),
    ("sapo", {"tau_neg": -1}, "tau_neg", "objective 'sapo': tau_neg=-1 must be > 0"),
])
def test_a_bad_setting_is_one_line_naming_key_and_objective(name, given, key, message):
    with pytest.raises(HparamError) as err:
        resolve_hparams(name, given)
    assert err.value.key == key and err.value.objective == name
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_cispo_alone_may_drop_the_lower_bound():
    """Appendix D: CISPO's ε_low = 10 (no lower bound); a trust region keeps 1 − ε_low ≥ 0."""
    assert resolve_hparams("cispo", {"eps_low": 10})["eps_low"] == 10
    for name in ("grpo", "gspo", "gmpo", "dhpo"):
        with pytest.raises(HparamError, match="must be <= 1"):
            resolve_hparams(name, {"eps_low": 10})


def test_text_values_are_typed_by_the_annotation():
    assert parse_hparams("grpo", ["eps_low=0.1", "dual_clip=none"]) == {"eps_low": 0.1, "dual_clip": None}
    assert parse_hparams("grpo", ["dual_clip=3"]) == {"dual_clip": 3.0}
    assert parse_hparams("dhpo", ["clip=unified"]) == {"clip": "unified"}
    with pytest.raises(HparamError, match="eps_low given twice"):
        parse_hparams("grpo", ["eps_low=0.1", "eps_low=0.2"])


# ---- The worked example of docs/objectives.md, "Adding a setting": one new keyword, no other code edit ----

def _grpo_with_adv_scale(x, *, eps_low: float = 0.2, eps_high: float = 0.2, dual_clip: float | None = None,
                         loss_agg_mode: str = PAPER_AGG_MODE, adv_scale: float = 1.0):
    """GRPO with a throw-away setting: advantages scaled by `adv_scale` (the loss is linear in A)."""
    original = registry._REGISTRY["grpo"].__wrapped_original__
    return original(dataclasses.replace(x, adv=x.adv * adv_scale), eps_low=eps_low, eps_high=eps_high,
                    dual_clip=dual_clip, loss_agg_mode=loss_agg_mode)


@pytest.fixture
def grpo_with_a_new_setting(monkeypatch):
    original = registry._REGISTRY["grpo"]
    _grpo_with_adv_scale.__wrapped_original__ = original
    monkeypatch.setitem(registry._REGISTRY, "grpo", _grpo_with_adv_scale)
    registry._params.cache_clear(), registry._types.cache_clear()
    yield
    monkeypatch.setitem(registry._REGISTRY, "grpo", original)
    registry._params.cache_clear(), registry._types.cache_clear()


def test_a_new_setting_reaches_every_surface(grpo_with_a_new_setting, tmp_path):
    # the library
    lp, old, adv, mask, _ = make_batch()
    one, two = get_objective("grpo")(lp, old, adv, mask).loss, get_objective("grpo", adv_scale=2.0)(lp, old, adv, mask)
    torch.testing.assert_close(two.loss, 2 * one)
    # the embedded trainer's config and command line
    from typer.testing import CliRunner

    from dhpo_suite.cli import app
    from dhpo_suite.train.embedded.config import TrainConfig

    cfg = TrainConfig(algo="grpo", hparams=parse_hparams("grpo", ["adv_scale=2"])).validate()
    assert cfg.resolved_hparams()["adv_scale"] == 2.0
    # verl: `--hp` becomes policy_loss.hparams, verl's config class accepts it, the loss reads it
    res = CliRunner().invoke(app, ["train", "--backend", "verl", "--dry-run", "--algo", "grpo", "--hp", "adv_scale=2",
                                   "--out", str(tmp_path / "run")])
    assert res.exit_code == 0, res.output
    assert "+actor_rollout_ref.actor.policy_loss.hparams.adv_scale=2.0" in res.stdout.split()
    from dhpo_suite.train.verl_backend.hparams import objective_hparams
    from dhpo_suite.train.verl_backend.launch import plan

    pl = plan("grpo", "qwen3-1.7b", ["+actor_rollout_ref.actor.policy_loss.hparams.adv_scale=2"], out=tmp_path / "r")
    assert objective_hparams("grpo", pl.config.actor_rollout_ref.actor)["adv_scale"] == 2


def test_a_literal_annotation_declares_its_choices(monkeypatch):
    """docs/objectives.md: a setting typed `Literal[...]` needs no entry in the registry's tables."""
    def scratch(x, *, side: Literal["low", "high"] = "low", loss_agg_mode: str = PAPER_AGG_MODE):
        raise AssertionError("not called")

    monkeypatch.setitem(registry._REGISTRY, "scratch", scratch)
    registry._params.cache_clear(), registry._types.cache_clear()
    try:
        assert resolve_hparams("scratch", {"side": "high"})["side"] == "high"
        assert parse_hparams("scratch", ["side=high"]) == {"side": "high"}
        with pytest.raises(HparamError, match="objective 'scratch': side='both' must be one of low, high"):
            resolve_hparams("scratch", {"side": "both"})
    finally:
        monkeypatch.delitem(registry._REGISTRY, "scratch")
        registry._params.cache_clear(), registry._types.cache_clear()


def test_a_name_registered_twice_is_refused():
    with pytest.raises(ValueError, match="objective 'grpo' is registered already"):
        registry.register_objective("grpo")(lambda x: x)
    with pytest.raises(ValueError, match="objective 'dhpo-e' is registered already"):  # an alias's name too
        registry.register_objective("dhpo-e")(lambda x: x)


def test_which_configurations_need_the_entropy():
    """Declared by each objective at registration: DHPO-E's w is g(sg[H]) (eq. 10); DHPO-A's w is the constant
    0.5; no baseline reads the entropy."""
    needs = {n: get_objective(n).needs_entropy for n in ("dhpo-e", "dhpo-a", "grpo", "gspo", "gmpo", "cispo", "sapo")}
    assert needs == {"dhpo-e": True, "dhpo-a": False, "grpo": False, "gspo": False, "gmpo": False, "cispo": False,
                     "sapo": False}
    assert (get_objective("dhpo", mixing="entropy").needs_entropy
            and not get_objective("dhpo", mixing="avg").needs_entropy)
