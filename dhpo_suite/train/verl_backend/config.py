"""How the objective's settings travel through verl's config: a subclass of verl's PolicyLossConfig.

verl builds `actor.policy_loss` with Hydra's `_target_` (default `verl.workers.config.PolicyLossConfig`)
and rejects keys that class does not declare. Our launcher sets

    actor_rollout_ref.actor.policy_loss._target_=dhpo_suite.train.verl_backend.config.DHPOPolicyLossConfig
    actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.dhpo
    +actor_rollout_ref.actor.policy_loss.hparams.clip=unified   (`+` because the key is new to verl's YAML)

so every setting of the objective, by its own keyword, reaches each worker's loss as
`config.policy_loss.hparams` (hparams.py maps verl's own `actor.clip_ratio_low/high`, `loss_agg_mode`,
`tau_pos/tau_neg`). Resolving `_target_` imports this module, which
imports the plugin (registration and hooks), so a broken install fails here, loudly, instead of inside
verl's silent plugin loader, and a run works even with VERL_USE_EXTERNAL_PLUGINS=none (the seam patches
already-imported verl modules in place). `__post_init__` checks the loss name and the settings with
the objective library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from dhpo_suite.train.verl_backend import plugin, registration, seam  # noqa: F401  (plugin: installs the patches)
from dhpo_suite.train.verl_backend.names import objective_of

__all__ = ["DHPOPolicyLossConfig"]


@dataclass
class DHPOPolicyLossConfig(seam.policy_loss_config_base()):
    """verl's PolicyLossConfig plus the objective's settings. None means "the objective's paper default"."""

    hparams: dict[str, Any] = field(default_factory=dict)
    """The objective's settings by its own keywords (eps_low, seq_eps_low, mixing, dual_clip, ...): hparams.py."""
    resolved: bool = False
    """Set by the start-up check (startup.py): verl's fields and `hparams` hold every setting, final."""
    run_dir: Optional[str] = None
    """Run directory that receives per-step telemetry (None: no telemetry files)."""
    telemetry: dict[str, Any] = field(default_factory=dict)
    """TelemetrySpec overrides (top_k, n_samples, max_response_length, ...)."""

    def __post_init__(self) -> None:
        name = objective_of(self.loss_mode)
        if name is not None:
            registration.check_registered(self.loss_mode)
            from dhpo_suite.train.verl_backend.hparams import check_given

            check_given(name, self)
        if self.telemetry:
            from dhpo_suite.runs import TelemetrySpec

            try:
                TelemetrySpec(**dict(self.telemetry))
            except TypeError as e:
                raise ValueError(f"actor.policy_loss.telemetry: {e}") from None

