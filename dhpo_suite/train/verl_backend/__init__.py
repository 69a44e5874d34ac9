"""dhpo_suite.train.verl_backend: DHPO and every baseline inside verl through a plugin (docs/verl.md).

    launch.run("dhpo-e", "qwen3-4b", overrides=[...], dry_run=True)   # `dhpo-suite train --backend verl`
    data.prepare("simplerl-zoo", "data/verl")                         # `dhpo-suite data prepare`
    loss_mode("dhpo-e") == "dhpo_suite.dhpo-e"                         # verl's actor.policy_loss.loss_mode

The verl entry point is `plugin.py`; the one adapter of verl's loss call is `policy_loss.py`; the one module
that touches verl's internals is `seam/` (docs/verl.md). Importing this package does not import verl or torch.
"""

from dhpo_suite.train.verl_backend.data import prepare
from dhpo_suite.train.verl_backend.launch import plan, run
from dhpo_suite.train.verl_backend.presets import PRESETS, AlgorithmSettings, Preset, algorithm_settings, get_preset
from dhpo_suite.train.verl_backend.names import LOSS_PREFIX, loss_mode

__all__ = [
    "LOSS_PREFIX",
    "PRESETS",
    "AlgorithmSettings",
    "Preset",
    "algorithm_settings",
    "get_preset",
    "loss_mode",
    "plan",
    "prepare",
    "run",
]
