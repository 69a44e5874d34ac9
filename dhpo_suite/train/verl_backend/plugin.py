"""verl's `verl.plugins` entry point (declared in pyproject.toml): imported by every process that imports verl.

Importing it costs nothing up front (`install`, idempotent, runs on import). It registers a "cpu" verl platform
(with VERL_PLATFORM=cpu also the CPU shims and rollout, cpu_platform.py) and wires the backend into verl through
the seam (`seam.install`; `WIRING` names what verl's patched code calls: our losses in its registry, per-update
telemetry, the tracking mirror, the start-up checks), so a plain `python -m verl.trainer.main_ppo` launch is
checked (and gets the paper's settings) like ours.

The seam was audited against one verl release (`seam.SUPPORTED_VERL`); with another one installed the plugin
patches nothing and says so in one line. verl swallows exceptions raised here (it logs them at DEBUG level).
That is why runs launched by dhpo-suite also name `dhpo_suite.train.verl_backend.config.DHPOPolicyLossConfig`
as their policy-loss `_target_`: resolving it imports the same code loudly and checks that the loss is registered.
"""

import functools
import sys

from dhpo_suite.tracking import verl_tracking
from dhpo_suite.train.verl_backend import cpu_platform, rank_telemetry, registration, run_manifest, seam, startup

__all__ = ["WIRING", "install"]

WIRING = seam.Wiring(
    policy_losses=registration.policy_losses,
    run_step=rank_telemetry.run_step,
    checkpoint_saved=rank_telemetry.export_checkpoint,
    checkpoint_loaded=rank_telemetry.note_checkpoint_loaded,
    patch_tracking=functools.partial(verl_tracking.patch, on_finish=run_manifest.close_plain),
    check_startup=startup.on_validate,
    loss_fn_set=startup.on_loss_fn_set,
)


def install() -> None:
    """Every patch of the plugin (idempotent): the CPU platform, then the seam's patches. Another verl than the
    one the seam knows patches nothing: one line on stderr (verl itself logs a plugin's error at DEBUG only),
    and the error is raised (loud where our config class imports the plugin)."""
    try:
        seam.check_verl_version()
    except seam.VerlVersionError as e:
        print(f"error: {e}", file=sys.stderr, flush=True)
        raise
    cpu_platform.install()
    seam.install(WIRING)


install()
