"""How the objective's settings travel through verl's config: a subclass of verl's PolicyLossConfig.

verl builds `actor.policy_loss` with Hydra's `_target_` (default `verl.workers.config.PolicyLossConfig`)
and rejects keys that class does not declare. Our launcher sets

    actor_rollout_ref.actor.policy_loss._target_=dhpo_suite.train.verl_backend.config.DHPOPolicyLossConfig
    actor_rollout_ref.actor.policy_loss.loss_mode=dhpo_suite.dhpo
    +actor_rollout_ref.actor.policy_loss.hparams.clip=unified   (`+` because the key is new to verl's YAML)

so every setting of the objective, by its own keyword, reaches each worker's loss as
`config.policy_loss.hparams` (hparams.py maps verl's own `actor.clip_ratio_low/high`, `loss_agg_mode`,
`tau_pos/tau_neg` and reads the older knob fields below). Resolving `_target_` imports this module, which
imports the plugin (registration and hooks), so a broken install fails here, loudly, instead of inside
verl's silent plugin loader, and a run works even with VERL_USE_EXTERNAL_PLUGINS=none (the seam patches
already-imported verl modules in place). `__post_init__` checks the loss name and the settings with
the objective library.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from dhpo_suite.train.verl_backend import plugin, registration, seam  # noqa: F401  (plugin: installs the patches)
from dhpo_suite.train.verl_backend.names import POLICY_LOSS_CONFIG as TARGET

__all__ = ["DHPOPolicyLossConfig", "TARGET"]


@dataclass
class DHPOPolicyLossConfig(seam.policy_loss_config_base()):
    """verl's PolicyLossConfig plus the objective's settings. None means "the objective's paper default"."""

    hparams: dict[str, Any] = field(default_factory=dict)
    """The objective's settings by its own keywords (eps_low, seq_eps_low, mixing, dual_clip, ...): hparams.py."""
    # Older spellings of some hparams keys, still read (hparams.LEGACY_KNOBS) so existing scripts run.
    mixing: Optional[str] = None
    """DHPO mixing weight: "avg" (w = avg_weight) or "entropy" (w = g(sg[H]), eq. 10)."""
    clip: Optional[str] = None
    """DHPO clipping: "branch" (each ratio in its own region, eq. 11) or "unified" (the ablation)."""
    seq_clip_ratio_low: Optional[float] = None
    """DHPO sequence-branch ε_low (the token branch uses actor.clip_ratio_low)."""
    seq_clip_ratio_high: Optional[float] = None
    """DHPO sequence-branch ε_high (the token branch uses actor.clip_ratio_high)."""
    avg_weight: Optional[float] = None
    """DHPO-A's constant w."""
    entropy_scope: Optional[str] = None
    """DHPO-E entropy normalisation: "sequence" (per response) or "batch" (per micro-batch)."""
    dual_clip: Optional[float] = None
    """GRPO dual-clip constant c (None: no dual clip, as in the paper)."""
    run_dir: Optional[str] = None
    """Run directory that receives per-step telemetry (None: no telemetry files)."""
    telemetry: dict[str, Any] = field(default_factory=dict)
    """TelemetrySpec overrides (top_k, n_samples, max_response_length, ...)."""

    def __post_init__(self) -> None:
        name = registration.objective_of(self.loss_mode)
        if name is not None:
            registration.check_registered(self.loss_mode)
            from dhpo_suite.train.verl_backend.hparams import check_hparams

            check_hparams(name, self)
        if self.telemetry:
            from dhpo_suite.runs import TelemetrySpec

            try:
                TelemetrySpec(**dict(self.telemetry))
            except TypeError as e:
                raise ValueError(f"actor.policy_loss.telemetry: {e}") from None

