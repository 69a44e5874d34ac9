"""Where the plugin meets verl's worker code: run-after-import hooks and two thin wrappers.

verl's policy-loss functions receive (old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
config, rollout_is_weights) and never the entropy, although `verl.workers.utils.losses.ppo_loss`, their
only caller in the engine workers, holds the micro-batch's `model_output` (log-probs and, when
`actor.calculate_entropy=True`, entropies) and the micro-batch `data`. Two wrappers close the gap:

- `ppo_loss` is wrapped to put (model_output, data) of the current micro-batch in a context variable
  for the duration of the call; `micro_batch_entropy(log_prob)` turns the stashed entropy into the
  padded (B, T) layout and checks, by comparing the stashed log-probs with the `log_prob` the loss got,
  that it is the same micro-batch.
- `TrainingWorker.train_mini_batch` (one call = one actor update = one training step) is wrapped in
  `rank_telemetry.run_step`, which merges the step's telemetry across data-parallel ranks into the run
  directory; `save_checkpoint`/`load_checkpoint` export verl's HF checkpoint there and keep step numbers
  aligned with verl's `global_steps` after a resume.

Nothing is imported eagerly: each patch runs right after verl imports the module it patches (a
meta-path finder), so processes that never train (vLLM servers, reward workers) pay nothing, and a
patched name is in place before any `from ... import ppo_loss` binds it.
"""

from __future__ import annotations

import contextvars
import functools
import importlib.abc
import sys
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["after_import", "install", "micro_batch_entropy", "MicroBatch", "current_micro_batch"]

_PATCHED = "__dhpo_suite_patched__"


@dataclass(frozen=True)
class MicroBatch:
    """What `ppo_loss` holds for one micro-batch: the engine's model_output and the micro-batch data."""

    model_output: Any
    data: Any


_MICRO_BATCH: contextvars.ContextVar[MicroBatch | None] = contextvars.ContextVar("dhpo_suite_micro_batch", default=None)


def current_micro_batch() -> MicroBatch | None:
    """The micro-batch whose `ppo_loss` call is running, or None outside one."""
    return _MICRO_BATCH.get()


class _RunAfter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs callbacks right after a named module finishes executing (import-order independent)."""

    def __init__(self) -> None:
        self.pending: dict[str, list[Callable[[Any], None]]] = {}
        self._inner: dict[str, importlib.abc.Loader] = {}

    def find_spec(self, fullname, path, target=None):
        if fullname not in self.pending:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                self._inner[fullname] = spec.loader
                spec.loader = self
                return spec
        return None

    def create_module(self, spec):
        return self._inner[spec.name].create_module(spec)

    def exec_module(self, module) -> None:
        name = module.__spec__.name
        module.__spec__.loader = module.__loader__ = self._inner.pop(name)
        module.__loader__.exec_module(module)
        for callback in self.pending.pop(name, []):
            callback(module)


_RUN_AFTER = _RunAfter()


def after_import(module_name: str, callback: Callable[[Any], None]) -> None:
    """Call `callback(module)` now if `module_name` is imported, else right after it is."""
    if module_name in sys.modules:
        callback(sys.modules[module_name])
        return
    _RUN_AFTER.pending.setdefault(module_name, []).append(callback)
    if _RUN_AFTER not in sys.meta_path:
        sys.meta_path.insert(0, _RUN_AFTER)


# ---- the wrappers ----
def _wrap_ppo_loss(ppo_loss: Callable) -> Callable:
    if getattr(ppo_loss, _PATCHED, False):
        return ppo_loss

    @functools.wraps(ppo_loss)
    def ppo_loss_with_micro_batch(config, model_output, data, dp_group=None):
        token = _MICRO_BATCH.set(MicroBatch(model_output, data))
        try:
            return ppo_loss(config, model_output, data, dp_group)
        finally:
            _MICRO_BATCH.reset(token)

    setattr(ppo_loss_with_micro_batch, _PATCHED, True)
    return ppo_loss_with_micro_batch


def _patch_ppo_loss_name(module) -> None:
    """Rebind `module.ppo_loss` (verl's losses module and every module that imported the name)."""
    if hasattr(module, "ppo_loss"):
        module.ppo_loss = _wrap_ppo_loss(module.ppo_loss)


def _wrap_method(cls, name: str, make: Callable[[Callable], Callable]) -> None:
    """Replace cls.name by make(original); functools.wraps keeps verl's @register dispatch attributes."""
    original = getattr(cls, name)
    if getattr(original, _PATCHED, False):
        return
    wrapper = functools.wraps(original)(make(original))
    setattr(wrapper, _PATCHED, True)
    setattr(cls, name, wrapper)


def _patch_training_worker(module) -> None:
    """One TrainingWorker.train_mini_batch call = one telemetry step; checkpoints land in the run dir."""
    from dhpo_suite.train.verl_backend import rank_telemetry as rt

    _patch_ppo_loss_name(module)

    def train_mini_batch(original):
        return lambda self, data: rt.run_step(self, data, lambda: original(self, data))

    def save_checkpoint(original):
        def save(self, local_path, hdfs_path=None, global_step=0, max_ckpt_to_keep=None):
            result = original(self, local_path, hdfs_path, global_step, max_ckpt_to_keep)
            rt.export_checkpoint(self, local_path, global_step)
            return result

        return save

    def load_checkpoint(original):
        def load(self, local_path, hdfs_path=None, del_local_after_load=False):
            result = original(self, local_path, hdfs_path, del_local_after_load)
            rt.note_checkpoint_loaded(local_path)
            return result

        return load

    for name, make in (("train_mini_batch", train_mini_batch), ("save_checkpoint", save_checkpoint),
                       ("load_checkpoint", load_checkpoint)):
        _wrap_method(module.TrainingWorker, name, make)


def _patch_tracking(module) -> None:
    """verl's Tracking (trainer.logger) also mirrors our step telemetry: dhpo_suite/tracking/verl_tracking.py."""
    from dhpo_suite.tracking.verl_tracking import patch

    patch(module)


def install() -> None:
    """Install every patch (idempotent). Called by the plugin module on import."""
    after_import("verl.workers.utils.losses", _patch_ppo_loss_name)
    after_import("verl.trainer.distillation.losses", _patch_ppo_loss_name)
    after_import("verl.workers.engine_workers", _patch_training_worker)
    after_import("verl.utils.tracking", _patch_tracking)


def micro_batch_entropy(log_prob):
    """Per-token entropy (B, T) of the micro-batch whose loss is being computed, or None if verl did not
    compute it (`actor.calculate_entropy=false`). Raises if no micro-batch is stashed or it does not
    match `log_prob` (B, T), i.e. if the entropy would belong to another micro-batch."""
    import torch
    from verl.workers.utils.padding import no_padding_2_padding

    mb = current_micro_batch()
    if mb is None:
        raise RuntimeError(
            "dhpo_suite: no micro-batch in scope: the loss was not called through verl's ppo_loss, or the "
            "dhpo_suite plugin was imported after verl.workers.utils.losses bound ppo_loss "
            "(check VERL_USE_EXTERNAL_PLUGINS)"
        )
    entropy = mb.model_output.get("entropy", None)
    if entropy is None:
        return None
    stashed = no_padding_2_padding(mb.model_output["log_probs"], mb.data)
    if stashed.shape != log_prob.shape or not torch.equal(stashed, log_prob):
        raise RuntimeError(
            f"dhpo_suite: stashed micro-batch (log_prob {tuple(stashed.shape)}) does not match the loss "
            f"input {tuple(log_prob.shape)}: refusing to use entropy from another micro-batch"
        )
    return no_padding_2_padding(entropy, mb.data)
