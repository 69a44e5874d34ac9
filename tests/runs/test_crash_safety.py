"""SIGKILL a writer subprocess mid-run: every completed step reads back, nothing corrupt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from dhpo_suite.runs import RunReader

WRITER = textwrap.dedent(
    """
    import sys
    from dhpo_suite.runs import RunWriter
    from dhpo_suite.testing.synthetic_runs import synthetic_manifest, synthetic_record
    run_dir, compact_every = sys.argv[1], int(sys.argv[2])
    records = [synthetic_record(s, "dhpo-e", s, max_len=64, prompts=4, group_size=4) for s in range(4)]
    w = RunWriter(run_dir, synthetic_manifest("dhpo-e", max_len=64), compact_every=compact_every)
    print("ready", flush=True)
    step = 0
    while True:
        rec = records[step % 4]
        rec.step = step
        w.write_step(rec)
        print(step, flush=True)
        step += 1
    """
)


@pytest.mark.parametrize("delay", [0.0, 0.13, 0.37])
def test_sigkill_mid_run_leaves_every_completed_step(tmp_path, delay):
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(run_dir), "3"], stdout=subprocess.PIPE, text=True,
                         env=env)
    try:
        assert p.stdout.readline().strip() == "ready"
        assert p.stdout.readline().strip() == "0"  # step 0 committed: the writer is running (even on a busy CPU)
        time.sleep(delay)  # then it is mid-step (or mid-compaction) at an arbitrary moment
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            p.kill()
    printed = [0] + [int(line) for line in p.stdout.read().split()]  # steps whose write_step returned
    r = RunReader(run_dir)
    steps = r.steps()
    assert steps == list(range(len(steps))) and len(steps) >= printed[-1] + 1
    assert r.problems == [] and r.manifest.status == "running"
    df = r.scalars()
    assert df["entropy/mean"].notna().all()
    for s in steps:  # every committed step is complete and readable
        rec = r.record(s)
        assert rec.distributions and rec.samples and np.isfinite(rec.scalars["reward/mean"])


def test_leftovers_of_a_killed_step_are_ignored(tmp_path):
    from dhpo_suite.runs import RunWriter
    from dhpo_suite.testing.synthetic_runs import synthetic_manifest, synthetic_record

    run = tmp_path / "run"
    w = RunWriter(run, synthetic_manifest("grpo"))
    w.write_step(synthetic_record(1, "grpo"))
    # A step killed after its distributions but before its scalars, plus a torn temp file.
    rec = synthetic_record(2, "grpo")
    (run / "distributions" / "step-000002.parquet").write_bytes(b"")
    (run / "scalars" / ".tmp-999-step-000002.parquet").write_bytes(b"PAR1 torn")
    r = RunReader(run)
    assert r.steps() == [1] and r.problems == []
    assert r.distributions(None, "entropy").keys() == {1}
    w.write_step(rec)  # resuming overwrites the leftovers
    assert RunReader(run).distributions(2, "entropy").total > 0
    # Reopening a killed run folds its per-step scalar files and removes torn temp files.
    (run / "scalars" / ".tmp-999-step-000003.parquet").write_bytes(b"PAR1 torn")
    RunWriter(run, synthetic_manifest("grpo"), resume=True)
    assert sorted(p.name for p in (run / "scalars").iterdir()) == ["scalars.parquet"]
    assert RunReader(run).steps() == [1, 2]


def test_reading_a_live_run_while_it_compacts(tmp_path):
    """A reader polling a run that a writer is filling (and compacting every 2 steps) never fails and
    never sees a step disappear."""
    import threading

    from dhpo_suite.runs import RunWriter, StepRecord
    from dhpo_suite.testing.synthetic_runs import synthetic_manifest

    run = tmp_path / "run"
    w = RunWriter(run, synthetic_manifest("grpo"), compact_every=2, fsync=False)
    done = threading.Event()

    def write():
        for s in range(80):
            w.write_step(StepRecord(s, {"reward/mean": float(s)}))
            time.sleep(0.005)  # a real step takes seconds; this still compacts far more often than a run
        done.set()

    t = threading.Thread(target=write)
    t.start()
    seen = 0
    try:
        while not done.is_set():
            r = RunReader(run)
            steps = r.steps()
            assert steps == list(range(len(steps))) and len(steps) >= seen and r.problems == []
            seen = len(steps)
    finally:
        t.join()
    w.close()
    assert RunReader(run).steps() == list(range(80))
