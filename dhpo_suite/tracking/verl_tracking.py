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
  through `RunReader` and logged at its own step (with a samples table every `TABLE_EVERY` steps);
- `finish(exit_code)`: verl's TaskRunnerV1.run calls it right after `fit` returned (0) or raised (1); then
  `on_finish(run_dir, exit_code)` runs (the verl backend closes a plain launch's manifest with it). Not when
  the object is merely collected (`__del__` calls `finish()` with no code, whatever happened).

A failure (unreadable run directory, a tracker error) warns once and switches our part off; verl's own
logging is never touched.
"""

from __future__ import annotations

import functools
import logging
from pathlib import Path
from typing import Any, Callable

__all__ = ["TABLE_EVERY", "VerlMirror", "patch", "run_dir_of"]

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
    run_dir = run_dir_of(config)
    if run_dir is None:
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


def run_dir_of(config: Any) -> str | None:
    """The run directory of verl's resolved config when it trains a dhpo_suite loss with one, else None."""
    policy_loss = _get(config, "actor_rollout_ref", "actor", "policy_loss") or {}
    run_dir, loss_mode = policy_loss.get("run_dir"), str(policy_loss.get("loss_mode") or "")
    return str(run_dir) if run_dir and loss_mode.startswith("dhpo_suite.") else None


def patch(module, on_finish: Callable[[str, int], object] | None = None) -> None:
    """Wrap `module.Tracking` (verl.utils.tracking) so that our telemetry joins verl's destinations, and
    `on_finish(run_dir, exit_code)` runs when verl finishes a dhpo_suite run's tracking with an exit code."""
    cls = module.Tracking
    if getattr(cls, _PATCHED, False):
        return
    init, log, finish = cls.__init__, cls.log, cls.finish

    @functools.wraps(init)
    def __init__(self, project_name, experiment_name, default_backend="console", config=None):
        init(self, project_name, experiment_name, default_backend, config)
        self._dhpo_mirror, self._dhpo_run_dir = None, run_dir_of(config or {})
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

    @functools.wraps(finish)
    def finish_(self, exit_code=None):
        result = finish(self, exit_code=0 if exit_code is None else exit_code)
        run_dir = getattr(self, "_dhpo_run_dir", None)
        # Our own once-flag, not verl's private `_finished`: ours runs once whatever verl's does.
        if exit_code is not None and run_dir and on_finish is not None and not getattr(self, "_dhpo_finished", False):
            self._dhpo_finished = True
            try:
                on_finish(run_dir, int(exit_code))
            except Exception as e:  # noqa: BLE001 - verl's run has ended; its own exit must not fail on ours
                _log.warning("dhpo_suite: %s: could not record how verl's run ended: %s: %s", run_dir,
                             type(e).__name__, e)
        return result

    cls.__init__, cls.log, cls.finish = __init__, log_, finish_
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
