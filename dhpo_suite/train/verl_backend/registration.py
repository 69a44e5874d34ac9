"""Names of our losses in verl's policy-loss registry, and their registration.

Every objective of the library is registered as `dhpo_suite.<name>` (dhpo_suite.grpo, dhpo_suite.gspo,
dhpo_suite.gmpo, dhpo_suite.cispo, dhpo_suite.sapo, dhpo_suite.dhpo, dhpo_suite.dhpo-a, dhpo_suite.dhpo-e).
The prefix keeps them apart from verl's own `gspo`, `sapo`, `cispo` (different code, different defaults)
and makes a run's loss mode say where the loss comes from.
"""

from __future__ import annotations

__all__ = ["LOSS_PREFIX", "loss_mode", "objective_of", "register_all", "check_registered"]

LOSS_PREFIX = "dhpo_suite."


def loss_mode(objective: str) -> str:
    """verl `policy_loss.loss_mode` of a library objective name ("dhpo-e" -> "dhpo_suite.dhpo-e")."""
    return LOSS_PREFIX + objective


def objective_of(mode: str) -> str | None:
    """Library objective name of a verl loss mode, or None when the mode is not one of ours."""
    return mode[len(LOSS_PREFIX):] if mode.startswith(LOSS_PREFIX) else None


def register_all(registry_module=None) -> list[str]:
    """Register every library objective in verl's POLICY_LOSS_REGISTRY (idempotent); returns the modes."""
    from dhpo_suite.train.objectives import OBJECTIVES
    from dhpo_suite.train.verl_backend.policy_loss import make_policy_loss

    if registry_module is None:
        from verl.trainer.ppo import core_algos as registry_module

    modes = []
    for name in OBJECTIVES:
        mode = loss_mode(name)
        registry_module.register_policy_loss(mode)(make_policy_loss(name))
        modes.append(mode)
    return modes


def check_registered(mode: str) -> None:
    """Raise one clear error if `mode` is ours but absent from verl's registry in this process."""
    from dhpo_suite.train.objectives import OBJECTIVES
    from verl.trainer.ppo.core_algos import POLICY_LOSS_REGISTRY

    name = objective_of(mode)
    if name is None:
        return
    if name not in OBJECTIVES:
        raise ValueError(
            f"actor.policy_loss.loss_mode={mode!r}: unknown dhpo_suite objective {name!r}; "
            f"known: {', '.join(loss_mode(n) for n in OBJECTIVES)}"
        )
    if mode not in POLICY_LOSS_REGISTRY:
        raise RuntimeError(
            f"actor.policy_loss.loss_mode={mode!r} is not registered in verl: the dhpo_suite verl plugin did not "
            "load in this process (is dhpo-suite installed in the workers' environment, and "
            "VERL_USE_EXTERNAL_PLUGINS unset or listing dhpo_suite?)"
        )
