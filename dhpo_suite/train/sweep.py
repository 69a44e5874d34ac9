"""`dhpo-suite sweep`: an algorithm × clip × seed grid of `dhpo-suite train` runs, in parallel processes.

    OUT/sweep.json            the grid and the train options shared by every run (written once; checked on re-run)
    OUT/prereg.json           the pre-registration (`--prereg FILE`, copied before any run; its sha256 in sweep.json)
    OUT/<algo>[-<clip>]-s<seed>/   one run directory per cell (docs/run-format.md)
    OUT/logs/<cell>.log       each run's console output
    OUT/.writer.lock          held (runs/lock.py) while a sweep runs here: a second `sweep` on OUT is refused, untouched

Each cell is a `dhpo-suite train` subprocess with one torch thread, so a 2-core machine runs two at once.
Re-running the same command continues the sweep: completed runs are skipped, a run with a manifest (killed
mid-way) resumes with `--resume` from its last complete checkpoint, the rest start. Every algorithm of a
seed starts from the same warm-started model, draws the same prompts and samples the same first rollout
(prompts and sampling seeds are functions of (seed, step) in `train.embedded.loop`), so differences between
algorithms at a shared seed are paired.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from dhpo_suite.runs.lock import DirLock, LockHeld

__all__ = ["Cell", "Sweep", "SweepError", "cell_state", "default_workers", "load_or_create", "lock",
           "run_sweep"]

SWEEP_FILE = "sweep.json"
SWEEP_VERSION = 1


class SweepError(ValueError):
    """A bad sweep request or a sweep directory that does not match it (one line, names the option or file)."""


@dataclass(frozen=True)
class Cell:
    """One run of the grid."""

    algo: str
    clip: str | None
    seed: int

    @property
    def name(self) -> str:
        return f"{self.algo}{'-' + self.clip if self.clip else ''}-s{self.seed}"

    def argv(self, run_dir: Path, train_args: Sequence[str], resume: bool) -> list[str]:
        """The `dhpo-suite train` command line of this cell."""
        cmd = [sys.executable, "-m", "dhpo_suite.cli", "train", "--algo", self.algo, "--seed", str(self.seed),
               "--out", str(run_dir), "--threads", "1", "--no-progress", *train_args]
        if self.clip:
            cmd += ["--clip", self.clip]
        return cmd + (["--resume"] if resume else [])


@dataclass(frozen=True)
class Sweep:
    """The grid (what sweep.json holds)."""

    algos: tuple[str, ...]
    clips: tuple[str, ...]
    seeds: tuple[int, ...]
    train_args: tuple[str, ...]
    steps: int
    prereg_sha256: str | None = None
    """sha256 of OUT/prereg.json, registered before the first run (dhpo_suite.science.prereg)."""

    def cells(self) -> list[Cell]:
        """Seed-major, so a sweep stopped early holds every algorithm at its first seeds. Non-DHPO
        objectives have no clip mode and get one cell per seed."""
        return [Cell(algo, clip, s) for s in self.seeds for algo in self.algos
                for clip in (self.clips if algo.startswith("dhpo") and self.clips else (None,))]


def default_workers() -> int:
    """One process per available core (each runs one torch thread)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def load_or_create(out: Path, requested: Sweep | None, prereg: bytes | None = None,
                   canonical: Callable[[tuple[str, ...]], tuple[str, ...]] = lambda args: args) -> Sweep:
    """The sweep of `out`: the stored one (which `requested`, when given, must equal; the stored train options
    are compared as `canonical` writes them, so the same options typed in another order or spelling are the same
    sweep), or `requested`, stored now, with `prereg` (the pre-registration's bytes, whose digest `requested`
    carries) written to OUT/prereg.json before sweep.json, so no run can start before its pre-registration
    exists."""
    path = out / SWEEP_FILE
    if path.exists():
        try:
            d = json.loads(path.read_text())
            stored = Sweep(tuple(d["algos"]), tuple(d["clips"]), tuple(d["seeds"]), tuple(d["train_args"]),
                           int(d["steps"]), d.get("prereg_sha256"))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise SweepError(f"{path}: not a sweep file ({type(e).__name__}: {e})") from None
        if requested is not None and canonical(stored.train_args) == requested.train_args:
            requested = replace(requested, train_args=stored.train_args)
        if requested is not None and requested != stored:
            diff = [k for k in ("algos", "clips", "seeds", "train_args", "steps", "prereg_sha256")
                    if getattr(requested, k) != getattr(stored, k)]
            raise SweepError(f"{path}: this directory holds a different sweep ({', '.join(diff)} differ: stored "
                             + "; ".join(f"{k}={getattr(stored, k)}" for k in diff)
                             + "); run `dhpo-suite sweep OUT` alone to continue it, or choose another OUT")
        return stored
    if requested is None:
        raise SweepError(f"{out}: no {SWEEP_FILE} here; give --algos and --seeds to start a sweep")
    out.mkdir(parents=True, exist_ok=True)
    if prereg is not None:
        (out / "prereg.json.tmp").write_bytes(prereg)
        (out / "prereg.json.tmp").replace(out / "prereg.json")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"version": SWEEP_VERSION, **asdict(requested)}, indent=1))  # tuples as JSON lists
    tmp.replace(path)  # atomic: a killed start leaves no half-written sweep file
    return requested


def lock(out: Path) -> DirLock:
    """Hold OUT's writer lock (runs/lock.py) for this process; SweepError (one line) when another sweep holds it,
    even one this process was started from (`inherit=False`: a sweep launched by a run of the first is a second
    sweep). The kernel drops the flock when its holder dies, so a killed sweep never leaves a stale lock."""
    try:
        return DirLock(out, inherit=False).acquire()
    except LockHeld as e:
        raise SweepError(f"{out}: another `dhpo-suite sweep` is running on this directory ({e.holder}); wait for it "
                         "or stop it, or choose another OUT") from None


def cell_state(run_dir: Path, steps: int) -> tuple[str, int]:
    """("done" | "resume" | "new", committed steps) of a cell's run directory."""
    from dhpo_suite.runs import RunFormatError, RunReader

    if not (run_dir / "manifest.json").exists():
        return "new", 0
    try:
        reader = RunReader(run_dir)
        done = len(reader.scalars(columns=[]))
    except RunFormatError:
        return "resume", 0
    if reader.manifest.status == "completed" and done >= steps:
        return "done", done
    return "resume", done


@dataclass
class _Running:
    cell: Cell
    proc: subprocess.Popen
    log: object


def run_sweep(out: Path, sweep: Sweep, *, workers: int, on_update: Callable[[dict], None] = lambda s: None,
              poll_s: float = 1.0, held: DirLock | None = None) -> dict[str, str]:
    """Run every unfinished cell, `workers` at a time. Returns {cell name: "done" | "skipped" | "failed (rc N,
    see LOG)"}. `on_update` receives {"cells": n, "finished": n, "steps": committed, "total_steps": n,
    "running": [names]} after each poll. SIGINT/SIGTERM stop the children (the sweep resumes later). `held`: the
    sweep's lock, taken by the caller (`lock`); without it, taken here: SweepError, before any log is opened,
    when another sweep runs on `out`."""
    own = None if held is not None and held.directory == out and held.fileno() is not None else lock(out)
    try:
        return _run_cells(out, sweep, workers, on_update, poll_s)
    finally:
        if own is not None:
            own.release()


def _run_cells(out: Path, sweep: Sweep, workers: int, on_update: Callable[[dict], None],
               poll_s: float) -> dict[str, str]:
    cells = sweep.cells()
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    result: dict[str, str] = {}
    queue: list[tuple[Cell, bool]] = []
    for c in cells:
        state, _ = cell_state(out / c.name, sweep.steps)
        if state == "done":
            result[c.name] = "skipped"
        else:
            queue.append((c, state == "resume"))
    running: list[_Running] = []
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
    try:
        while queue or running:
            for r in [r for r in running if r.proc.poll() is not None]:
                running.remove(r)
                r.log.close()
                rc = r.proc.returncode
                result[r.cell.name] = "done" if rc == 0 else f"failed (rc {rc}, see {logs / (r.cell.name + '.log')})"
            while queue and len(running) < workers:
                pick = _next_startable(queue, running, out)
                if pick is None:
                    break
                cell, resume = queue.pop(pick)
                log = open(logs / f"{cell.name}.log", "a")
                log.write(f"\n# {time.strftime('%Y-%m-%d %H:%M:%S')} {'resume' if resume else 'start'}\n")
                log.flush()
                argv = cell.argv(out / cell.name, sweep.train_args, resume)
                proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                        start_new_session=True, preexec_fn=_die_with_parent)
                running.append(_Running(cell, proc, log))
            on_update(_progress(out, sweep, cells, result, running))
            if queue or running:
                time.sleep(poll_s)
    except BaseException:
        _stop(running)
        raise
    on_update(_progress(out, sweep, cells, result, running))
    return result


def _next_startable(queue: list[tuple[Cell, bool]], running: list[_Running], out: Path) -> int | None:
    """Index of the first queued cell whose seed is not being warm-started by a running cell (a run's
    manifest appears once its warm-started model is ready), so one seed's warm-start is built once."""
    busy = {r.cell.seed for r in running if not (out / r.cell.name / "manifest.json").exists()}
    for i, (cell, _) in enumerate(queue):
        if cell.seed not in busy:
            return i
    return None


def _progress(out: Path, sweep: Sweep, cells: list[Cell], result: dict, running: list[_Running]) -> dict:
    steps = sum(sweep.steps for name, r in result.items() if r in ("done", "skipped"))
    steps += sum(cell_state(out / r.cell.name, sweep.steps)[1] for r in running)
    return {"cells": len(cells), "finished": len(result), "steps": steps, "total_steps": len(cells) * sweep.steps,
            "running": [r.cell.name for r in running], "failed": sum(v.startswith("failed") for v in result.values())}


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the sweep dies (even by SIGKILL), so a re-run never finds a
    cell still being written by an orphan. The run's grader workers exit when their pipe closes."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _stop(running: list[_Running]) -> None:
    """Terminate the process groups of the cells we started (each its own session), then kill lingerers."""
    for r in running:
        if r.proc.poll() is None:
            _signal_group(r.proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    for r in running:
        try:
            r.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            _signal_group(r.proc.pid, signal.SIGKILL)
            r.proc.wait()
        r.log.close()


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:  # the group has already exited
        pass
