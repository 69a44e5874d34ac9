"""One writer per directory: a live holder refuses a second writer (naming pid and host); a dead one's lock is
stale and taken over; releasing lets the next writer in."""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys

import pytest

from dhpo_suite.runs.lock import LOCK_FILE, DirLock, LockHeld, holder_of

HOLD = ("import sys, time\nfrom dhpo_suite.runs.lock import DirLock\nDirLock(sys.argv[1]).acquire()\n"
        "print('held', flush=True)\ntime.sleep(120)\n")


def _holder(directory):
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_live_writer_refuses_a_second_one_naming_pid_and_host(tmp_path):
    proc = _holder(tmp_path / "run")
    try:
        with pytest.raises(LockHeld) as err:
            DirLock(tmp_path / "run").acquire()
        assert f"pid {proc.pid} on {platform.node()}" in str(err.value)
        assert str(tmp_path / "run") in str(err.value)
    finally:
        proc.kill()
        proc.wait()


def test_a_sigkilled_writer_leaves_a_stale_lock_that_is_taken_over(tmp_path):
    proc = _holder(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert holder_of(tmp_path)["pid"] == proc.pid  # the record is still there ...
    with DirLock(tmp_path) as lock:  # ... but the kernel dropped the flock with the process
        assert lock.stale["pid"] == proc.pid
        assert holder_of(tmp_path)["pid"] == os.getpid()
    assert holder_of(tmp_path) is None  # released: empty record, file kept


def test_release_lets_the_next_writer_in_and_keeps_the_file(tmp_path):
    with DirLock(tmp_path / "new" / "dir"):  # created on the way
        rec = json.loads((tmp_path / "new" / "dir" / LOCK_FILE).read_text())
        assert rec["pid"] == os.getpid() and rec["host"] == platform.node()
        with pytest.raises(LockHeld):
            DirLock(tmp_path / "new" / "dir").acquire()  # a second open file description: refused too
    with DirLock(tmp_path / "new" / "dir") as again:
        assert again.stale is None
    assert (tmp_path / "new" / "dir" / LOCK_FILE).exists()


def test_a_child_of_the_holder_writes_under_its_lock(tmp_path):
    """The evaluator's per-checkpoint and data-parallel workers are children of the process holding the lock."""
    code = ("import subprocess, sys\nfrom dhpo_suite.runs.lock import DirLock, LockHeld\n"
            "with DirLock(sys.argv[1]):\n"
            "    child = 'import sys\\nfrom dhpo_suite.runs.lock import DirLock\\n"
            "print(DirLock(sys.argv[1]).acquire().inherited)'\n"
            "    print(subprocess.run([sys.executable, '-c', child, sys.argv[1]], capture_output=True, text=True)"
            ".stdout.strip())\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "True", out.stderr
    proc = _holder(tmp_path / "other")  # not our parent: refused
    try:
        with pytest.raises(LockHeld):
            DirLock(tmp_path / "other").acquire()
    finally:
        proc.kill()
        proc.wait()


TRY = ("import sys\nfrom dhpo_suite.runs.lock import DirLock, LockHeld\ntry:\n"
       "    DirLock(sys.argv[1], inherit=False).acquire()\nexcept LockHeld as e:\n    print('refused', e.holder)\n")
HOLD_AND_TRY = ("import os, subprocess, sys\nfrom dhpo_suite.runs.lock import DirLock\n"
                "with DirLock(sys.argv[1], inherit=False):\n"
                "    print(os.getpid(), subprocess.run([sys.executable, '-c', sys.argv[2], sys.argv[1]],"
                " capture_output=True, text=True).stdout.strip())\n")


def test_with_inherit_off_a_child_of_the_holder_is_refused(tmp_path):
    """A sweep's lock: a second sweep started from the first's process tree is still a second sweep."""
    out = subprocess.run([sys.executable, "-c", HOLD_AND_TRY, str(tmp_path), TRY], capture_output=True, text=True,
                         timeout=60)
    holder, said = out.stdout.strip().split(" ", 1)
    assert said.startswith(f"refused pid {holder} on {platform.node()} since "), out.stdout + out.stderr
    with DirLock(tmp_path, inherit=False) as lock:  # released with its holder: free again, and not stale
        assert lock.stale is None


def test_without_flock_the_record_decides(tmp_path, monkeypatch):
    """Filesystems without flock (ENOLCK): a dead holder on this host is stale; a live or remote one refuses."""
    import errno
    import fcntl

    def no_flock(fd, op):
        raise OSError(errno.ENOLCK, "No locks available")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    record = {"pid": int(dead.stdout), "host": platform.node(), "since": "then", "command": "x"}
    (tmp_path / LOCK_FILE).write_text(json.dumps(record))
    with DirLock(tmp_path) as lock:
        assert lock.stale["pid"] == record["pid"]
    (tmp_path / LOCK_FILE).write_text(json.dumps({**record, "host": "another-host"}))
    with pytest.raises(LockHeld, match="on another-host"):
        DirLock(tmp_path).acquire()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / LOCK_FILE).write_text(json.dumps({**record, "pid": live.pid}))
        with pytest.raises(LockHeld, match=f"pid {live.pid}"):
            DirLock(tmp_path).acquire()
    finally:
        live.kill()
        live.wait()
