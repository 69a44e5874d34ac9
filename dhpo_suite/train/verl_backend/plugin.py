"""verl's `verl.plugins` entry point (declared in pyproject.toml): imported by every process that imports verl.

Importing it costs nothing up front. It
- registers a "cpu" verl platform, and with VERL_PLATFORM=cpu the CPU shims and rollout (cpu_platform.py),
- registers every dhpo-suite objective in verl's policy-loss registry as `dhpo_suite.<name>` as soon as
  `verl.trainer.ppo.core_algos` is imported (registration.py),
- wraps verl's `ppo_loss` and `TrainingWorker` right after their modules load (hooks.py) so losses see
  the micro-batch entropy and each update streams telemetry.

verl swallows exceptions raised here (it logs them at DEBUG level). That is why runs launched by
dhpo-suite also name `dhpo_suite.train.verl_backend.config.DHPOPolicyLossConfig` as their policy-loss
`_target_`: resolving it imports the same code loudly and checks that the loss is registered.
"""

from dhpo_suite.train.verl_backend import cpu_platform, hooks, registration

cpu_platform.install()
hooks.install()
hooks.after_import("verl.trainer.ppo.core_algos", registration.register_all)
