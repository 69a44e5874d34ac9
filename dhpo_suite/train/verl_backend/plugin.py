"""verl's `verl.plugins` entry point (declared in pyproject.toml): imported by every process that imports verl.

Importing it costs nothing up front (`install`, idempotent, runs on import). It
- registers a "cpu" verl platform, and with VERL_PLATFORM=cpu the CPU shims and rollout (cpu_platform.py),
- wires the backend into verl through the seam (seam.install): every dhpo-suite objective is registered in
  verl's policy-loss registry as `dhpo_suite.<name>` (registration.py) as soon as
  `verl.trainer.ppo.core_algos` is imported; verl's `ppo_loss` and `TrainingWorker` are wrapped right after
  their modules load, so losses see the micro-batch entropy and each update streams telemetry
  (rank_telemetry.py); verl's `Tracking` mirrors that telemetry (dhpo_suite/tracking/verl_tracking.py);
  verl's `validate_config` and each worker's `set_loss_fn` run the start-up checks (startup.py), so a plain
  `python -m verl.trainer.main_ppo` launch is checked (and gets the paper's settings) like ours.

verl swallows exceptions raised here (it logs them at DEBUG level). That is why runs launched by
dhpo-suite also name `dhpo_suite.train.verl_backend.config.DHPOPolicyLossConfig` as their policy-loss
`_target_`: resolving it imports the same code loudly and checks that the loss is registered.
"""

from dhpo_suite.tracking import verl_tracking
from dhpo_suite.train.verl_backend import cpu_platform, rank_telemetry, registration, seam, startup

__all__ = ["WIRING", "install"]

WIRING = seam.Wiring(
    policy_losses=registration.policy_losses,
    run_step=rank_telemetry.run_step,
    checkpoint_saved=rank_telemetry.export_checkpoint,
    checkpoint_loaded=rank_telemetry.note_checkpoint_loaded,
    patch_tracking=verl_tracking.patch,
    check_startup=startup.on_validate,
    loss_fn_set=startup.on_loss_fn_set,
)


def install() -> None:
    """Every patch of the plugin (idempotent): the CPU platform, then the seam's patches."""
    cpu_platform.install()
    seam.install(WIRING)


install()
