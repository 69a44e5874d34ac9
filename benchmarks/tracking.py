"""Mirroring cost (TensorBoard + W&B offline) beside the embedded trainer, and a 1000-step export.

    .venv/bin/python benchmarks/tracking.py               # ~5-10 min on 2 shared cores
    .venv/bin/python benchmarks/tracking.py --steps 3 --repeats 1 --export-steps 200   # quicker

1. Overhead, side by side in one process: the default tiny-model run trained for N steps with
   `logger="none"` and again with `logger="tensorboard,wandb"` (same seed, same steps), alternating
   `--repeats` times. For the mirrored run
   the mirrors' own timers give the training thread's cost (`submit`, a queue put) and the mirror thread's
   wall and CPU time per step, each as a fraction of the training step (rollout + reward + update +
   telemetry, the trainer's own `time/*_s` columns). The step-time difference between the two runs is
   printed too; on a shared 2-core machine it is mostly noise. The W&B service process's CPU is sampled too.
2. Export: a 1000-step synthetic run (testing.synthetic_runs) mirrored with `export_run` to TensorBoard and to an
   offline W&B run; wall time of each.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import tempfile
import time
from pathlib import Path

STEP_COLUMNS = ("time/rollout_s", "time/reward_s", "time/update_s", "time/telemetry_s")


class ServiceCPU:
    """CPU seconds (user + system) of the W&B service process (`wandb-core`, a child of this process),
    sampled every 0.2 s while it lives (its last 0.2 s, at finish, may be missed)."""

    def __init__(self) -> None:
        import threading

        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        import psutil

        me = psutil.Process()
        while not self._stop.is_set():
            for p in me.children(recursive=True):
                try:
                    if "wandb" in p.name():
                        t = p.cpu_times()
                        self.seen[p.pid] = t.user + t.system
                except psutil.Error:
                    continue
            self._stop.wait(0.2)

    def __enter__(self) -> "ServiceCPU":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def seconds(self) -> float:
        return sum(self.seen.values())


def train_run(out: Path, steps: int, logger: str, spies: list) -> list[float]:
    """Train the default tiny run for `steps` steps; returns the per-step training time (s)."""
    from dhpo_suite.runs import RunReader
    from dhpo_suite.train.embedded import TrainConfig, train
    from dhpo_suite.train.embedded import loop

    real = loop.open_live

    def spy(*args, **kwargs):  # keep the LiveMirrors the loop opens, to read its timers
        mirrors = real(*args, **kwargs)
        spies.append(mirrors)
        return mirrors

    loop.open_live = spy
    try:
        cfg = dataclasses.replace(TrainConfig(), steps=steps, out=str(out), logger=logger, eval_every=0,
                                  eval_prompts=8, checkpoint_every=steps)
        train(cfg, log=lambda s: None, show_progress=False)
    finally:
        loop.open_live = real
    frame = RunReader(out).scalars()
    return [float(sum(row[c] for c in STEP_COLUMNS)) for _, row in frame.iterrows()]


def overhead(root: Path, steps: int, repeats: int) -> None:
    """Runs alternate none / mirrored (`repeats` pairs), so that drifting load hits both alike."""
    plain: list[float] = []
    mirrored: list[float] = []
    spies: list = []
    service_s = 0.0
    for i in range(repeats):
        plain += train_run(root / "runs" / f"plain-{i}", steps, "none", [])
        with ServiceCPU() as service:
            mirrored += train_run(root / "runs" / f"mirrored-{i}", steps, "tensorboard,wandb", spies)
        service_s += service.seconds
    n = len(mirrored)
    step = statistics.mean(mirrored)
    submit = sum(m.submit_s for m in spies)
    work = sum(m.work_s for m in spies)
    work_cpu = sum(m.work_cpu_s for m in spies)
    m = spies[-1]
    first = lambda xs: [xs[k * steps] for k in range(repeats)]  # noqa: E731
    later = lambda xs: [x for k, x in enumerate(xs) if k % steps]  # noqa: E731
    print(f"\n## overhead: default tiny run, {repeats} x (logger none, then tensorboard,wandb offline), "
          f"{steps} steps each")
    print(f"training step, logger none:               {statistics.mean(plain):8.3f} s  (per-step: "
          f"{', '.join(f'{x:.2f}' for x in plain)})")
    print(f"training step, tensorboard+wandb:         {step:8.3f} s  (per-step: "
          f"{', '.join(f'{x:.2f}' for x in mirrored)})")
    a, b = statistics.median(later(plain)), statistics.median(later(mirrored))
    print(f"median step after the first, none/mirror: {a:8.3f} s / {b:.3f} s ({100 * (b / a - 1):+.1f} %; "
          f"on a shared machine mostly noise)")
    print(f"first steps, none / mirrored:             {', '.join(f'{x:.2f}' for x in first(plain))} s / "
          f"{', '.join(f'{x:.2f}' for x in first(mirrored))} s")
    print(f"training thread, submit per step:         {1e6 * submit / n:8.1f} us  "
          f"= {100 * submit / n / step:.4f} % of a step")
    print(f"mirror thread, wall per step:             {1e3 * work / n:8.2f} ms  "
          f"= {100 * work / n / step:.3f} % of a step")
    print(f"mirror thread, CPU per step:              {1e3 * work_cpu / n:8.2f} ms  "
          f"= {100 * work_cpu / n / step:.3f} % of a step")
    print(f"W&B service process, CPU per run:         {service_s / repeats:8.2f} s  "
          f"= {100 * service_s / n / step:.3f} % of a step (start-up and finish included)")
    print(f"start-up before the first step (last run): {m.preload_s:7.2f} s wall, once per run (imports, then "
          f"wandb.init and writers: {m.start_s:.2f} s wall, {m.start_cpu_s:.2f} s CPU on the mirror thread)")
    print(f"steps dropped by the mirrors:             {sum(x.dropped for x in spies)}")


def export_timing(root: Path, steps: int) -> None:
    from dhpo_suite.testing.synthetic_runs import write_synthetic_run
    from dhpo_suite.tracking import export_run

    run = root / "runs" / f"synthetic-{steps}"
    t0 = time.perf_counter()
    write_synthetic_run(run, steps=steps, algo="dhpo-e")
    made = time.perf_counter() - t0
    print(f"\n## export: synthetic dhpo-e run, {steps} steps (written in {made:.1f} s)")
    for to in ("tensorboard", "wandb"):
        t0, c0 = time.perf_counter(), time.process_time()
        with ServiceCPU() as service:
            result = export_run(run, to, root / f"export-{to}", table_every=10)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        print(f"export --to {to:<12} {result.steps} steps in {wall:6.2f} s  ({1e3 * wall / result.steps:.2f} ms/step; "
              f"CPU: this process {cpu:.1f} s, W&B service {service.seconds:.1f} s)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=6, help="training steps per run (overhead)")
    ap.add_argument("--export-steps", type=int, default=1000, help="steps of the exported synthetic run")
    ap.add_argument("--repeats", type=int, default=2, help="alternating (none, mirrored) pairs of runs")
    ap.add_argument("--skip-train", action="store_true", help="export timing only")
    ap.add_argument("--skip-export", action="store_true", help="overhead only")
    args = ap.parse_args()
    os.environ.setdefault("WANDB_MODE", "offline")  # no account, no network
    os.environ.setdefault("WANDB_SILENT", "true")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start")
    with tempfile.TemporaryDirectory(prefix="dhpo-tracking-") as tmp:
        if not args.skip_train:
            overhead(Path(tmp), args.steps, args.repeats)
        if not args.skip_export:
            export_timing(Path(tmp), args.export_steps)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
