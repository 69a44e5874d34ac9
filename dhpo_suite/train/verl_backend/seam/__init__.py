"""The one part of the backend that knows verl's internals: what we patch, read and call inside verl 0.9.1.

A verl upgrade means auditing this package (and, for CPU runs only, cpu_platform.py); docs/verl.md lists every
verl internal used here. Everything else of the backend talks to verl through this face (`seam.install`,
`seam.actor_config`, ...), its documented public entry points (`python -m verl.trainer.main_ppo`, the
`verl.trainer.config` Hydra tree, the `verl.plugins` entry point) and the policy-loss call signature of verl's
registry. Two modules, one per direction:

    patches.py   what we change in verl: the import hook, `install(wiring)`'s table of patches, the micro-batch
                 stash around `ppo_loss`, the actor worker's wrapped methods; the supported verl release
    reads.py     what we read and call of verl's objects: the launch's command line and YAML defaults, the
                 worker's actor config and data-parallel group, step metrics, checkpoint layouts, the
                 policy-loss registry and config classes, verl's own config check
"""

from dhpo_suite.train.verl_backend.seam.patches import (
    SUPPORTED_VERL,
    MicroBatch,
    VerlVersionError,
    Wiring,
    after_import,
    check_verl_version,
    current_micro_batch,
    global_step,
    install,
    micro_batch_entropy,
    use_entropy_function,
)
from dhpo_suite.train.verl_backend.seam.reads import (
    VERL_POLICY_LOSS_CONFIG,
    actor_config,
    check_config,
    command_line_keys,
    data_parallel_group,
    global_normalisers,
    global_step_of,
    hf_export,
    is_registered,
    policy_loss_config_base,
    step_metric,
    tokenizer,
    verl_actor_defaults,
    verl_default,
    writes_outputs,
)

__all__ = [
    "SUPPORTED_VERL", "VerlVersionError", "check_verl_version", "after_import", "Wiring", "install", "global_step",
    "MicroBatch", "current_micro_batch", "micro_batch_entropy", "use_entropy_function",
    "command_line_keys", "verl_default", "verl_actor_defaults", "actor_config", "data_parallel_group",
    "writes_outputs", "tokenizer", "global_normalisers", "step_metric", "hf_export", "global_step_of",
    "is_registered", "VERL_POLICY_LOSS_CONFIG", "policy_loss_config_base", "check_config",
]
