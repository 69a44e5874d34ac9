"""The verl backend's names, shared by every module of it: a leaf (standard library only, no verl, no torch).

Every objective of the library is registered in verl's policy-loss registry as `dhpo_suite.<name>`
(dhpo_suite.grpo, dhpo_suite.gspo, dhpo_suite.gmpo, dhpo_suite.cispo, dhpo_suite.sapo, dhpo_suite.dhpo,
dhpo_suite.dhpo-a, dhpo_suite.dhpo-e). The prefix keeps them apart from verl's own `gspo`, `sapo`, `cispo`
(different code, different defaults) and makes a run's loss mode say where the loss comes from.
"""

from __future__ import annotations

__all__ = ["GLOBAL_STEP_KEY", "LOSS_PREFIX", "POLICY_LOSS_CONFIG", "RID_KEY", "loss_mode", "objective_of"]

LOSS_PREFIX = "dhpo_suite."
POLICY_LOSS_CONFIG = "dhpo_suite.train.verl_backend.config.DHPOPolicyLossConfig"
"""The `_target_` of `actor.policy_loss` in every launch (config.py): verl builds our config class."""
GLOBAL_STEP_KEY = "dhpo_global_steps"
"""Non-tensor field of an actor update's batch: verl's trainer-side `global_steps` (seam/patches.py puts it there)."""
RID_KEY = "dhpo_response_id"
"""Batch field holding each row's global response id (rank_telemetry.py), -1 for verl's padding rows."""


def loss_mode(objective: str) -> str:
    """verl `policy_loss.loss_mode` of a library objective name ("dhpo-e" -> "dhpo_suite.dhpo-e")."""
    return LOSS_PREFIX + objective


def objective_of(mode: str) -> str | None:
    """Library objective name of a verl loss mode, or None when the mode is not one of ours."""
    return mode[len(LOSS_PREFIX):] if mode.startswith(LOSS_PREFIX) else None
