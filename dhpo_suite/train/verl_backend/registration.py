"""Our losses in verl's policy-loss registry: every library objective as `dhpo_suite.<name>` (names.py)."""

from __future__ import annotations

from typing import Callable

from dhpo_suite.train.verl_backend import seam
from dhpo_suite.train.verl_backend.names import loss_mode, objective_of

__all__ = ["policy_losses", "check_registered"]


def policy_losses() -> dict[str, Callable]:
    """{verl loss mode: verl policy-loss function} for every library objective."""
    from dhpo_suite.train.objectives import OBJECTIVES
    from dhpo_suite.train.verl_backend.policy_loss import make_policy_loss

    return {loss_mode(name): make_policy_loss(name) for name in OBJECTIVES}


def check_registered(mode: str) -> None:
    """Raise one clear error if `mode` is ours but absent from verl's registry in this process."""
    from dhpo_suite.train.objectives import OBJECTIVES

    name = objective_of(mode)
    if name is None:
        return
    if name not in OBJECTIVES:
        raise ValueError(
            f"actor.policy_loss.loss_mode={mode!r}: unknown dhpo_suite objective {name!r}; "
            f"known: {', '.join(loss_mode(n) for n in OBJECTIVES)}"
        )
    if not seam.is_registered(mode):
        raise RuntimeError(
            f"actor.policy_loss.loss_mode={mode!r} is not registered in verl: the dhpo_suite verl plugin did not "
            "load in this process (is dhpo-suite installed in the workers' environment, and "
            "VERL_USE_EXTERNAL_PLUGINS unset or listing dhpo_suite?)"
        )
