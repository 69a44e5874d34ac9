"""What the seam patches inside verl 0.9.1, and the verl release it was audited against.

1. **Patches after import.** Nothing of verl is imported eagerly: `after_import(name, fn)` runs `fn(module)`
   right after verl finishes importing `name` (a meta-path finder), so processes that never train (vLLM
   servers, reward workers) pay nothing, and a patched name is in place before any `from ... import ppo_loss`
   binds it. `install(wiring)` declares every patch in one table.
2. **The micro-batch.** verl's policy losses never receive the entropy, but their only caller,
   `verl.workers.utils.losses.ppo_loss`, holds the engine's `model_output` (log-probs, entropies) and the
   micro-batch `data`. Its wrapper keeps both in `STATE.micro_batch` for the duration of the call.
3. **One actor update = one telemetry step.** `TrainingWorker.train_mini_batch` (all mini-batches and PPO
   epochs of one rollout batch) runs inside `wiring.run_step`, its batch carrying the trainer's `global_steps`;
   `save_checkpoint`/`load_checkpoint` report to `wiring.checkpoint_saved`/`checkpoint_loaded`.
4. **Start-up.** verl's `validate_config` (which `main_ppo` calls before Ray starts) runs `wiring.check_startup`
   first, and `TrainingWorker.set_loss_fn` (in each worker's `init_model`, before the first rollout) runs
   `wiring.loss_fn_set`: a plain `python -m verl.trainer.main_ppo` launch gets every check our launcher gets.
"""

from __future__ import annotations

import functools
import importlib.abc
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import TYPE_CHECKING, Any, Callable

from dhpo_suite.train.verl_backend.names import GLOBAL_STEP_KEY
from dhpo_suite.train.verl_backend.state import STATE

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    import torch

__all__ = [
    "SUPPORTED_VERL", "VerlVersionError", "check_verl_version", "after_import", "Wiring", "install", "global_step",
    "MicroBatch", "current_micro_batch", "micro_batch_entropy", "use_entropy_function",
]

_PATCHED = "__dhpo_suite_patched__"
SUPPORTED_VERL = "0.9.1"
"""The verl release whose internals this seam was audited against (docs/verl.md)."""


class VerlVersionError(RuntimeError):
    """The installed verl is not the one this seam knows (one line: supported and installed versions)."""


def check_verl_version() -> str:
    """The installed verl's version; raises VerlVersionError unless it is SUPPORTED_VERL (checked by version
    metadata, without importing verl)."""
    try:
        installed = metadata.version("verl")
    except metadata.PackageNotFoundError:
        installed = "none"
    if installed != SUPPORTED_VERL:
        raise VerlVersionError(f"dhpo_suite's verl plugin supports verl {SUPPORTED_VERL}; verl {installed} is "
                               f"installed (pip install verl=={SUPPORTED_VERL}, or a dhpo-suite release for yours)")
    return installed


# ---- 1. patches after import ----
class _RunAfter(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Runs `STATE.pending_imports[name]` right after module `name` finishes executing."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> ModuleSpec | None:
        if fullname not in STATE.pending_imports:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader_state = {"inner": spec.loader, "outer": spec.loader_state}
                spec.loader = self
                return spec
        return None

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return spec.loader_state["inner"].create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        spec = module.__spec__
        assert spec is not None
        inner = spec.loader_state["inner"]
        spec.loader_state = spec.loader_state["outer"]
        spec.loader = module.__loader__ = inner
        inner.exec_module(module)
        for callback in STATE.pending_imports.pop(spec.name, []):
            callback(module)


_FINDER = _RunAfter()  # stateless: the callbacks live in STATE


def after_import(module_name: str, callback: Callable[[Any], object]) -> None:
    """Call `callback(module)` now if `module_name` is imported, else right after it is."""
    if module_name in sys.modules:
        callback(sys.modules[module_name])
        return
    STATE.pending_imports.setdefault(module_name, []).append(callback)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


@dataclass(frozen=True)
class Wiring:
    """What the plugin runs inside verl (plugin.py builds it): the backend's functions the patches call."""

    policy_losses: Callable[[], dict[str, Callable]]
    """-> {loss mode: verl policy-loss function}, registered when verl's registry module loads."""
    run_step: Callable[[Any, Any, Callable[[], Any]], Any]
    """(worker, data, update) -> update(): one actor update as one telemetry step."""
    checkpoint_saved: Callable[[Any, str, int], Any]
    """(worker, local_path, global_step) after verl saved a checkpoint."""
    checkpoint_loaded: Callable[[str], None]
    """(local_path) after verl loaded a checkpoint (a resume)."""
    patch_tracking: Callable[[Any], None]
    """(verl.utils.tracking): our telemetry joins verl's trainer.logger (wraps its Tracking class)."""
    check_startup: Callable[[Any], None]
    """(the composed ppo_trainer config) before verl's validate_config: may fix it up or raise."""
    loss_fn_set: Callable[[Any], None]
    """(worker) after verl bound the worker's loss function (init_model): may raise."""


def install(wiring: Wiring) -> None:
    """Every patch the plugin applies to verl (idempotent), each right after verl imports its module."""
    after_import("verl.trainer.ppo.core_algos", lambda m: _register(wiring.policy_losses(), m))
    after_import("verl.workers.utils.losses", _patch_ppo_loss_name)
    after_import("verl.trainer.distillation.losses", _patch_ppo_loss_name)
    after_import("verl.workers.engine_workers", functools.partial(_patch_training_worker, wiring=wiring))
    after_import("verl.utils.tracking", wiring.patch_tracking)
    after_import("verl.utils.config", functools.partial(_patch_validate_config, wiring=wiring))
    after_import("verl.trainer.ppo.v1.trainer_base", _patch_update_actor)


def _patch_update_actor(module: Any) -> None:
    """The trainer's `global_steps` travels with the update's batch (verl hands `extra_info` to the workers as
    non-tensor fields), so telemetry's step is verl's step even when critic_warmup skips actor updates."""

    def update_actor(original: Callable, self: Any, batch: Any, metrics: dict) -> Any:
        batch.extra_info[GLOBAL_STEP_KEY] = int(self.global_steps)
        return original(self, batch, metrics)

    _wrap_method(module.PPOTrainer, "_update_actor", update_actor)


def global_step(data: Any) -> int | None:
    """verl's global step of an actor update's batch (None when the batch did not come through the patch)."""
    from verl.utils import tensordict_utils as tu

    value = tu.get_non_tensor_data(data, GLOBAL_STEP_KEY, None)
    return None if value is None else int(value)


def _patch_validate_config(module: Any, wiring: Wiring) -> None:
    """Our start-up check runs first inside verl's validate_config (main_ppo binds the name after the plugin
    loaded, so it gets this one); `__wrapped__` is verl's own, for callers that checked already."""

    def validate_config(original: Callable, config: Any, *args: Any, **kwargs: Any) -> Any:
        wiring.check_startup(config)
        if "use_critic" in kwargs:  # main_ppo computed it before our check set algorithm.adv_estimator
            from verl.trainer.ppo.utils import need_critic

            kwargs["use_critic"] = need_critic(config)
        return original(config, *args, **kwargs)

    _wrap_method(module, "validate_config", validate_config)


# ---- 2. the micro-batch of the running loss call ----
@dataclass(frozen=True)
class MicroBatch:
    """What `ppo_loss` holds for one micro-batch: the engine's model_output and the micro-batch data."""

    model_output: Any
    data: Any


def current_micro_batch() -> MicroBatch | None:
    """The micro-batch whose `ppo_loss` call is running, or None outside one."""
    return STATE.micro_batch.get()


def _with_micro_batch(ppo_loss: Callable, config: Any, model_output: Any, data: Any, dp_group: Any = None) -> Any:
    token = STATE.micro_batch.set(MicroBatch(model_output, data))
    try:
        return ppo_loss(config, model_output, data, dp_group)
    finally:
        STATE.micro_batch.reset(token)


def _patch_ppo_loss_name(module: Any) -> None:
    """Rebind `module.ppo_loss` (verl's losses module and every module that imported the name)."""
    if hasattr(module, "ppo_loss"):
        _wrap_method(module, "ppo_loss", _with_micro_batch)


def micro_batch_entropy(log_prob: torch.Tensor) -> torch.Tensor | None:
    """Per-token entropy (B, T) of the micro-batch whose loss is being computed, or None if verl did not
    compute it (`actor.calculate_entropy=false`). Raises if no micro-batch is stashed or it does not
    match `log_prob` (B, T), i.e. if the entropy would belong to another micro-batch."""
    import torch
    from verl.workers.utils.padding import no_padding_2_padding

    mb = current_micro_batch()
    if mb is None:
        raise RuntimeError("dhpo_suite: no micro-batch in scope: the loss was not called through verl's ppo_loss, "
                           "or the plugin loaded after verl bound ppo_loss (check VERL_USE_EXTERNAL_PLUGINS)")
    entropy = mb.model_output.get("entropy", None)
    if entropy is None:
        return None
    stashed = no_padding_2_padding(mb.model_output["log_probs"], mb.data)
    if stashed.shape != log_prob.shape or not torch.equal(stashed, log_prob):
        raise RuntimeError(f"dhpo_suite: stashed micro-batch (log_prob {tuple(stashed.shape)}) does not match the "
                           f"loss input {tuple(log_prob.shape)}: refusing to use entropy from another micro-batch")
    return no_padding_2_padding(entropy, mb.data)


# ---- 3. the actor worker ----
def _wrap_method(owner: Any, name: str, wrapper: Callable[..., Any]) -> None:
    """Replace owner.name (a class's method, a module's function) by a function that calls
    `wrapper(original, *args, **kwargs)`, once; functools.wraps keeps verl's @register dispatch attributes."""
    original = getattr(owner, name)
    if getattr(original, _PATCHED, False):
        return

    @functools.wraps(original)
    def patched(*args: Any, **kwargs: Any) -> Any:
        return wrapper(original, *args, **kwargs)

    setattr(patched, _PATCHED, True)
    setattr(owner, name, patched)


def _patch_training_worker(module: Any, wiring: Wiring) -> None:
    """One TrainingWorker.train_mini_batch call = one telemetry step; checkpoints reported to the wiring."""
    _patch_ppo_loss_name(module)

    def train_mini_batch(original: Callable, self: Any, data: Any) -> Any:
        return wiring.run_step(self, data, lambda: original(self, data))

    def save_checkpoint(original: Callable, self: Any, local_path: str, hdfs_path: Any = None, global_step: int = 0,
                        max_ckpt_to_keep: Any = None) -> Any:
        result = original(self, local_path, hdfs_path, global_step, max_ckpt_to_keep)
        wiring.checkpoint_saved(self, local_path, global_step)
        return result

    def load_checkpoint(original: Callable, self: Any, local_path: str, hdfs_path: Any = None,
                        del_local_after_load: bool = False) -> Any:
        result = original(self, local_path, hdfs_path, del_local_after_load)
        wiring.checkpoint_loaded(local_path)
        return result

    def set_loss_fn(original: Callable, self: Any, loss_fn: Any) -> Any:
        result = original(self, loss_fn)
        wiring.loss_fn_set(self)
        return result

    for wrapper in (train_mini_batch, save_checkpoint, load_checkpoint, set_loss_fn):
        _wrap_method(module.TrainingWorker, wrapper.__name__, wrapper)


def use_entropy_function(worker: Any, fn: Callable[..., Any]) -> bool:
    """Make the worker's engine compute the token entropy with `fn(logits, chunk_size=...)` (verl's FSDP engine's
    `compute_entropy_from_logits`, used without fused kernels on remove-padding batches); False when the
    engine has no such attribute (another engine: verl's own function stays)."""
    engine = getattr(worker, "engine", None)
    if engine is None or not hasattr(engine, "compute_entropy_from_logits"):
        return False
    engine.compute_entropy_from_logits = fn
    return True


# ---- our losses in verl's registry ----
def _register(losses: dict[str, Callable], registry_module: Any) -> None:
    for mode, fn in losses.items():
        registry_module.register_policy_loss(mode)(fn)
