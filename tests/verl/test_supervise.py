"""The launcher's stop path without verl: SIGTERM to `dhpo-suite` ends verl's driver and every process it
started, also ones that ignore SIGINT or left the driver's session (as Ray's daemons do)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import psutil
import pytest

from dhpo_suite.runs import Manifest, RunWriter, read_manifest
from dhpo_suite.train.verl_backend.launch import finish, supervise

# A stand-in for verl's driver: starts a grandchild in a new session (like Ray's raylet/gcs), writes both pids,
# then ignores SIGINT for a while (a driver stuck in shutdown), so the grace kill and the marker sweep are needed.
DRIVER = r"""
import json, os, signal, subprocess, sys, time
kid = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
signal.signal(signal.SIGINT, lambda *a: time.sleep(600))
print(json.dumps({"driver": os.getpid(), "daemon": kid.pid}), flush=True)
time.sleep(600)
"""

LAUNCHER = r"""
import sys
from dhpo_suite.runs import Manifest, RunWriter
from dhpo_suite.train.verl_backend.launch import finish, supervise
writer = RunWriter(sys.argv[2], Manifest(algorithm="grpo", backend="verl")) if len(sys.argv) > 2 else None
code, stopped = supervise([sys.executable, "-c", sys.argv[1]], grace=2.0)
print("RESULT", code, stopped, flush=True)
if writer is not None:
    sys.exit(finish(writer, code, stopped))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])  # SIGHUP: the user's terminal closed
def test_a_stop_signal_ends_the_driver_and_every_marked_process(sig, tmp_path):
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, DRIVER, str(tmp_path / "run")],
                                stdout=subprocess.PIPE, text=True)
    try:
        pids = json.loads(launcher.stdout.readline())
        procs = [psutil.Process(p) for p in pids.values()]
        deadline = time.monotonic() + 30  # the daemon may still be between fork and exec (empty environ)
        while not all(p.environ().get("DHPO_SUITE_VERL_RUN") for p in procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(p.environ().get("DHPO_SUITE_VERL_RUN") for p in procs)  # the marker reached both
        launcher.send_signal(sig)
        out, _ = launcher.communicate(timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert out.split() == ["RESULT", str(-signal.SIGKILL), str(int(sig))]  # killed after the grace
    assert launcher.returncode == 128 + sig  # as a shell reports a process ended by the signal
    m = read_manifest(tmp_path / "run")
    assert m.status == "interrupted" and signal.Signals(sig).name in m.error
    time.sleep(0.5)
    assert not [p.pid for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_a_finished_driver_leaves_nothing_behind():
    driver = ("import json, os, subprocess, sys; kid = subprocess.Popen([sys.executable, '-c', 'import time; "
              "time.sleep(600)'], start_new_session=True); "
              "print(json.dumps({'daemon': kid.pid, 'marker': os.environ['DHPO_SUITE_VERL_RUN']}))")
    out = subprocess.run([sys.executable, "-c", LAUNCHER, driver], capture_output=True, text=True, timeout=60)
    first, last = out.stdout.splitlines()[0], out.stdout.split()[-3:]
    assert last == ["RESULT", "0", "None"]
    facts = json.loads(first)
    assert not psutil.pid_exists(facts["daemon"]) or psutil.Process(facts["daemon"]).status() == psutil.STATUS_ZOMBIE
    assert not [p for p in psutil.process_iter() if _marker(p) == facts["marker"]]


def _marker(p) -> str | None:
    try:
        return p.environ().get("DHPO_SUITE_VERL_RUN")
    except (psutil.Error, OSError):
        return None


def test_a_killed_driver_is_exit_137_and_a_failed_manifest(tmp_path):
    """SIGKILL of verl's driver (the OOM killer's way): the launcher exits 128 + 9 as a shell would say, not
    Python's 256 - 9 = 247, and the manifest says who was killed by what."""
    writer = RunWriter(tmp_path / "run", Manifest(algorithm="grpo", backend="verl"))
    code, stopped = supervise([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    assert (code, stopped) == (-signal.SIGKILL, None)
    assert finish(writer, code, stopped) == 137
    m = read_manifest(tmp_path / "run")
    assert m.status == "failed" and "killed by SIGKILL" in m.error


KILLABLE_LAUNCHER = r"""
import sys
from dhpo_suite.runs import Manifest, RunWriter
from dhpo_suite.runs.lock import DirLock
from dhpo_suite.train.verl_backend.launch import supervise
lock = DirLock(sys.argv[2]).acquire()
writer = RunWriter(sys.argv[2], Manifest(algorithm="grpo", backend="verl"))
supervise([sys.executable, "-c", sys.argv[1]], grace=2.0, lock_fd=lock.fileno(), run_dir=sys.argv[2])
"""


def test_a_killed_launcher_takes_its_job_with_it(tmp_path):
    """SIGKILL of the launcher (nothing of it runs again): its reaper ends the driver (which here ignores the
    SIGINT it gets) and the daemon that left the driver's session, the manifest says `failed` and why, and
    the run directory stays locked until every process of the job has ended."""
    from dhpo_suite.runs.lock import DirLock, LockHeld

    run = tmp_path / "run"
    launcher = subprocess.Popen([sys.executable, "-c", KILLABLE_LAUNCHER, DRIVER, str(run)], stdout=subprocess.PIPE,
                                text=True)
    try:
        pids = json.loads(launcher.stdout.readline())
        procs = [psutil.Process(p) for p in pids.values()]
        deadline = time.monotonic() + 30
        while not all(_marker(p) for p in procs) and time.monotonic() < deadline:
            time.sleep(0.1)
        launcher.kill()
        launcher.wait(timeout=10)
        with pytest.raises(LockHeld):  # a relaunch now would race the job still ending
            DirLock(run).acquire()
        _, alive = psutil.wait_procs(procs, timeout=60)
    finally:
        if launcher.poll() is None:
            launcher.kill()
    assert not [p.pid for p in alive if p.status() != psutil.STATUS_ZOMBIE]
    deadline = time.monotonic() + 30
    while read_manifest(run).status == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
    m = read_manifest(run)
    assert m.status == "failed" and f"the launcher (pid {launcher.pid}) ended without closing the run" in m.error
    deadline = time.monotonic() + 30
    while True:  # the reaper lets go of the lock once it has closed the manifest
        try:
            DirLock(run).acquire().release()
            break
        except LockHeld:
            assert time.monotonic() < deadline, "the lock was never released"
            time.sleep(0.2)
