"""The Weights & Biases mirror: one `run.log(..., step=step)` per step with every scalar, every 1-D histogram
(`wandb.Histogram` with the run directory's own bins) and, every `table_every` steps, the sampled rollouts as a
`wandb.Table` under `samples`. The manifest is the run config.

Offline (`WANDB_MODE=offline`, or no API key configured) needs no account and no network: the run lands in
`<dir>/wandb/offline-run-*` and `wandb sync` uploads it later.
"""

from __future__ import annotations

import netrc
import os
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from dhpo_suite.runs import StepRecord

from . import content

__all__ = ["WandbMirror", "default_mode", "step_payload"]


def default_mode() -> str:
    """$WANDB_MODE if set; otherwise online only when an API key is configured ($WANDB_API_KEY, or the
    ~/.netrc entry `wandb login` writes for the W&B host), else offline (needs no account)."""
    mode = os.environ.get("WANDB_MODE")
    if mode:
        return mode
    if os.environ.get("WANDB_API_KEY"):
        return "online"

    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname
    try:
        return "online" if netrc.netrc(os.environ.get("NETRC")).authenticators(host) else "offline"
    except (OSError, netrc.NetrcParseError):  # no ~/.netrc, or one we cannot read: no key configured
        return "offline"


class WandbMirror:
    """Logs steps into a W&B run: a new one (`dir`, `project`, `name`) or an open one (verl's, via `run`)."""

    name = "wandb"

    def __init__(self, dir: Path | str | None = None, *, project: str = "dhpo-suite", name: str | None = None,
                 run: Any = None, config_key: str | None = None, mode: str | None = None):
        """`config_key`: put the manifest under this key of the run config instead of at its top level
        (verl's run config already holds verl's own `algorithm`, `trainer`, ...)."""
        self.dir, self.project, self.run_name, self.run = dir, project, name, run
        self.config_key, self.mode = config_key, mode
        self._owned = run is None

    def start(self, manifest: Any) -> None:
        import wandb

        config = content.manifest_config(manifest)
        if self.run is None:
            Path(self.dir).mkdir(parents=True, exist_ok=True)
            # No console capture and no system-metrics sampler: the mirror must not touch the trainer's
            # stdout/stderr or spend its CPU.
            settings = wandb.Settings(console="off", x_disable_stats=True, x_disable_machine_info=True,
                                      x_save_requirements=False, save_code=False, disable_git=True, silent=True)
            self.run = wandb.init(project=self.project, name=self.run_name or config.get("name") or None,
                                  dir=str(self.dir), mode=self.mode or default_mode(), settings=settings,
                                  config=config if self.config_key is None else {self.config_key: config},
                                  reinit="create_new")
        else:
            self.run.config.update({self.config_key or "dhpo_suite": config}, allow_val_change=True)
        self.location = Path(self.run.settings.sync_dir)  # wandb/<offline-run-...> (what `wandb sync` takes)

    def log_step(self, record: StepRecord, *, samples: bool = False) -> None:
        self.run.log(step_payload(record, samples=samples), step=int(record.step))

    def flush(self) -> None:
        pass  # the W&B service writes asynchronously; finish() drains it

    def close(self) -> None:
        if self._owned and self.run is not None:
            import wandb

            self.run.finish()
            # finish() can return before wandb's service has written the last records of an offline run
            # (.wandb file); shutting the service down waits for it (a later run starts a new one).
            wandb.teardown()


def step_payload(record: StepRecord, *, samples: bool = False) -> dict[str, Any]:
    """{name: value} for run.log: scalars, wandb.Histogram per 1-D histogram, a wandb.Table of samples."""
    import wandb

    out: dict[str, Any] = dict(content.scalars(record))
    for name, b in content.histograms(record).items():
        b = _at_most(b, wandb.Histogram.MAX_LENGTH)
        out[name] = wandb.Histogram(np_histogram=(b.counts.tolist(), b.edges.tolist()))
    rows = content.sample_rows(record) if samples else []
    if rows:
        cols = list(content.SAMPLE_COLUMNS)
        out["samples"] = wandb.Table(columns=cols, data=[[r[c] for c in cols] for r in rows])
    return out


def _at_most(b: content.Bins, n: int) -> content.Bins:
    """Merge runs of k adjacent bins so that at most `n` remain (wandb.Histogram's limit; the default
    TelemetrySpec never needs it: its largest histogram, w, has 500 bins)."""
    k = -(-len(b.counts) // n)
    if k <= 1:
        return b
    import numpy as np

    pad = (-len(b.counts)) % k
    counts = np.concatenate([b.counts, np.zeros(pad, b.counts.dtype)]).reshape(-1, k).sum(1)
    edges = np.concatenate([b.edges[:-1][::k], b.edges[-1:]])
    return content.Bins(edges, counts)
