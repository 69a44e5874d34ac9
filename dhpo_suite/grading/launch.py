"""Starting worker processes without re-running the caller's `__main__` in them.

multiprocessing's forkserver (like spawn) re-imports the parent's main script in every child so that
objects defined there can be unpickled. The grader's worker needs nothing from `__main__`, and that
re-import is costly: under `dhpo-suite eval` it imports the whole CLI (pandas, pyarrow) into each
worker and into each replacement after a timeout. For an unguarded script it would even re-run the
caller's top-level code. `WorkerProcess` is a forkserver process whose preparation data omits the
main module; the rest of the launch is CPython 3.11's `popen_forkserver.Popen._launch`.
"""

from __future__ import annotations

import io
import os
from multiprocessing import context, forkserver, popen_forkserver, reduction, spawn, util

__all__ = ["WorkerProcess"]


class _Popen(popen_forkserver.Popen):
    def _launch(self, process_obj) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_name", None)
        prep_data.pop("init_main_from_path", None)
        buf = io.BytesIO()
        context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            context.set_spawning_popen(None)
        self.sentinel, w = forkserver.connect_to_new_process(self._fds)
        _parent_w = os.dup(w)  # as in CPython: the child watches this end to see the parent die
        self.finalizer = util.Finalize(self, util.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class WorkerProcess(context.ForkServerProcess):
    """A forkserver process that does not import the parent's `__main__`."""

    @staticmethod
    def _Popen(process_obj):
        return _Popen(process_obj)
