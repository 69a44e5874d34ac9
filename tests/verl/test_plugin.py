"""The `verl.plugins` entry point, in fresh processes that import only verl (no mocks of verl)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dhpo_suite.train.objectives import OBJECTIVES

PROBE = r"""
import json, sys
import verl                                     # loads the entry point (and swallows its errors)
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY, get_policy_loss_fn
import verl.workers.engine_workers as ew
import verl.workers.utils.losses as losses
ours = sorted(k for k in POLICY_LOSS_REGISTRY if k.startswith("dhpo_suite."))
fns = {k: get_policy_loss_fn(k).__name__ for k in ours}
print(json.dumps({
    "ours": ours, "fns": fns,
    "ppo_loss_wrapped": getattr(ew.ppo_loss, "__dhpo_suite_patched__", False) and ew.ppo_loss is losses.ppo_loss,
    "train_mini_batch_wrapped": getattr(ew.TrainingWorker.train_mini_batch, "__dhpo_suite_patched__", False),
    "dispatch_kept": any(k.startswith("attrs_") for k in vars(ew.TrainingWorker.train_mini_batch)),
}))
"""


def _probe(env_extra: dict[str, str]) -> dict:
    env = {**os.environ, **env_extra}
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_entry_point_registers_every_objective_and_wraps_the_worker():
    got = _probe({})
    assert got["ours"] == sorted(f"dhpo_suite.{n}" for n in OBJECTIVES)
    for mode, fn in got["fns"].items():
        assert fn.startswith("dhpo_suite_"), (mode, fn)
    assert got["ppo_loss_wrapped"], "verl's ppo_loss is not wrapped in engine_workers"
    assert got["train_mini_batch_wrapped"] and got["dispatch_kept"]


FALLBACK = r"""
import json
import verl
import verl.workers.engine_workers as ew
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY
from verl.utils.config import omega_conf_to_dataclass
from dhpo_suite.train.verl_backend.registration import check_registered
try:
    check_registered("dhpo_suite.dhpo-e")
    message = None
except RuntimeError as e:
    message = str(e)
before = sorted(k for k in POLICY_LOSS_REGISTRY if k.startswith("dhpo_suite."))
from dhpo_suite.train.verl_backend.overrides import algorithm_overrides, compose
from dhpo_suite.train.verl_backend.presets import algorithm_settings
cfg = compose(algorithm_overrides(algorithm_settings("dhpo-e"), None) + ["actor_rollout_ref.actor.strategy=fsdp2",
                                                                  "actor_rollout_ref.actor.use_dynamic_bsz=true"])
actor = omega_conf_to_dataclass(cfg.actor_rollout_ref.actor)   # resolves our policy_loss _target_
print(json.dumps({"message": message, "before": before,
                  "after": sorted(k for k in POLICY_LOSS_REGISTRY if k.startswith("dhpo_suite.")),
                  "wrapped": bool(getattr(ew.ppo_loss, "__dhpo_suite_patched__", False)),
                  "policy_loss": type(actor.policy_loss).__name__}))
"""


@pytest.mark.slow
def test_without_entry_point_the_config_target_registers_loudly():
    # VERL_USE_EXTERNAL_PLUGINS=none: verl loads no plugin, so our losses are unknown and the check says so
    # in one line; resolving our policy_loss `_target_` (what every launch does) imports and patches anyway.
    env = {**os.environ, "VERL_USE_EXTERNAL_PLUGINS": "none"}
    out = subprocess.run([sys.executable, "-c", FALLBACK], capture_output=True, text=True, env=env, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["before"] == [] and "plugin did not load" in got["message"] and "\n" not in got["message"]
    assert got["after"] == sorted(f"dhpo_suite.{n}" for n in OBJECTIVES)
    assert got["wrapped"] and got["policy_loss"] == "DHPOPolicyLossConfig"


def test_registration_message_when_loss_is_missing():
    from dhpo_suite.train.verl_backend.registration import check_registered

    with pytest.raises(ValueError, match="unknown dhpo_suite objective 'dhpo-x'"):
        check_registered("dhpo_suite.dhpo-x")
    check_registered("vanilla")  # not ours: no opinion


OTHER_VERL = r"""
import importlib.metadata as metadata
real = metadata.version
metadata.version = lambda name: "0.10.0" if name == "verl" else real(name)   # as if verl 0.10.0 were installed
import verl
from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY
from dhpo_suite.train.verl_backend.launch import LaunchError, plan
print("registered:", any(k.startswith("dhpo_suite.") for k in POLICY_LOSS_REGISTRY))
try:
    plan("grpo", "qwen3-1.7b")
except LaunchError as e:
    print("launcher:", e)
"""


@pytest.mark.slow
def test_another_verl_is_refused_at_plugin_load_in_one_line():
    """A verl the seam was not audited against: the plugin patches nothing and says which verl it supports and
    which is installed, once, in one line (verl itself would log it at DEBUG); the launcher refuses likewise."""
    out = subprocess.run([sys.executable, "-c", OTHER_VERL], capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    line = "dhpo_suite's verl plugin supports verl 0.9.1; verl 0.10.0 is installed"
    assert [x for x in out.stderr.splitlines() if "dhpo_suite's verl plugin" in x] == [
        f"error: {line} (pip install verl==0.9.1, or a dhpo-suite release for yours)"]
    assert "registered: False" in out.stdout
    assert f"launcher: {line}" in out.stdout
