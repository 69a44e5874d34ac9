"""Our step telemetry inside verl's own `trainer.logger` destinations: one W&B run and one TensorBoard log
directory hold verl's metrics and ours, on verl's step axis.

verl's trainer (driver process) builds `verl.utils.tracking.Tracking(..., default_backend=trainer.logger,
config=<the resolved config>)` and calls `Tracking.log(metrics, step=global_steps)` once per step, after the
actor update, i.e. after the data-parallel rank 0 committed that step to our run directory (rank_telemetry
writes it before `train_mini_batch` returns, and verl's step numbers are ours). `patch(module)`, installed by
the verl plugin when verl imports `verl.utils.tracking`, wraps the two methods:

- `__init__`: when the config's policy loss is a `dhpo_suite.*` loss with `policy_loss.run_dir` set and verl
  logs to `tensorboard` and/or `wandb`, mirrors are opened on verl's own writers: its TensorBoard
  `SummaryWriter` (our events go into the same event file) and its W&B run (our manifest under the run
  config key `dhpo_suite`);
- `log(data, step)`: after verl's own log, every committed step <= `step` not mirrored yet is read back
  through `RunReader` and logged at its own step (with a samples table every `TABLE_EVERY` steps).

A failure (unreadable run directory, a tracker error) warns once and switches our part off; verl's own
logging is never touched.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any

__all__ = ["TABLE_EVERY", "VerlMirror", "patch"]

TABLE_EVERY = 10
"""Sampled rollouts go to W&B as a table every this many steps."""

_PATCHED = "__dhpo_suite_tracking__"
_log = logging.getLogger(__name__)


class VerlMirror:
    """Mirrors one run directory into an open verl `Tracking`'s TensorBoard writer and W&B run."""

    def __init__(self, run_dir: Path | str, mirrors: list[Any], table_every: int = TABLE_EVERY):
        self.run_dir, self.mirrors, self.table_every = Path(run_dir), mirrors, table_every
        self.done: set[int] = set()
        self.started = False

    def log_through(self, step: int) -> None:
        """Mirror every committed step <= `step` not mirrored yet, in order."""
        from dhpo_suite.runs import RunReader

        from .export import iter_records

        reader = RunReader(self.run_dir)
        if not self.started:
            for m in self.mirrors:
                m.start(reader.manifest)
            self.started = True
        todo = {s for s in reader.steps() if s <= step and s not in self.done}
        if todo:
            for record, samples in iter_records(reader, self.table_every, [], steps=todo):
                for m in self.mirrors:
                    m.log_step(record, samples=samples)
                self.done.add(record.step)
            for m in self.mirrors:
                m.flush()


def mirror_for(config: Any, loggers: dict[str, Any]) -> VerlMirror | None:
    """A VerlMirror when `config` (verl's resolved config, a dict) trains a dhpo_suite loss with a run
    directory and `loggers` (Tracking.logger) holds tensorboard and/or wandb; None otherwise."""
    policy_loss = _get(config, "actor_rollout_ref", "actor", "policy_loss") or {}
    run_dir, loss_mode = policy_loss.get("run_dir"), str(policy_loss.get("loss_mode") or "")
    if not run_dir or not loss_mode.startswith("dhpo_suite."):
        return None
    mirrors = []
    if "tensorboard" in loggers:
        from .tensorboard import TensorBoardMirror

        writer = loggers["tensorboard"].writer  # verl's torch SummaryWriter: share its event file
        mirrors.append(TensorBoardMirror(file_writer=writer._get_file_writer(), text_tag="dhpo_suite/manifest"))
    if "wandb" in loggers and getattr(loggers["wandb"], "run", None) is not None:
        from .wandb_run import WandbMirror

        mirrors.append(WandbMirror(run=loggers["wandb"].run, config_key="dhpo_suite"))
    return VerlMirror(run_dir, mirrors) if mirrors else None


def patch(module) -> None:
    """Wrap `module.Tracking` (verl.utils.tracking) so that our telemetry joins verl's destinations."""
    cls = module.Tracking
    if getattr(cls, _PATCHED, False):
        return
    init, log = cls.__init__, cls.log

    @functools.wraps(init)
    def __init__(self, project_name, experiment_name, default_backend="console", config=None):
        init(self, project_name, experiment_name, default_backend, config)
        self._dhpo_mirror = None
        try:
            self._dhpo_mirror = mirror_for(config or {}, getattr(self, "logger", {}))
        except Exception as e:  # noqa: BLE001 - verl's own logging goes on regardless
            _warn(e)

    @functools.wraps(log)
    def log_(self, data, step, backend=None):
        result = log(self, data, step, backend)
        mirror = getattr(self, "_dhpo_mirror", None)
        if mirror is not None and backend is None:
            try:
                mirror.log_through(int(step))
            except Exception as e:  # noqa: BLE001
                self._dhpo_mirror = None
                _warn(e)
        return result

    cls.__init__, cls.log = __init__, log_
    setattr(cls, _PATCHED, True)


def _warn(e: Exception) -> None:
    _log.warning("dhpo_suite: mirroring the step telemetry into verl's trainer.logger switched off: %s: %s "
                 "(training goes on; the run directory is complete: dhpo-suite export RUN --to ...)",
                 type(e).__name__, e)


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if d is None:
            return None
        d = d.get(k) if hasattr(d, "get") else getattr(d, k, None)
    return d
