"""A local Dask cluster that stops in one line: Ctrl-C and the end of a run.

Ctrl-C in a terminal reaches the whole process group: the cluster's worker processes too, each
of which then stopped on its own and logged the broken connections, cancelled tasks and
killed processes of the shutdown (about 70 lines of tracebacks under the one line curator
prints). The worker processes of curator's own cluster ignore SIGINT, so only the run reacts
to it (it cancels its tasks and closes the cluster), and what the cluster logs while it is
being closed, in the workers and in this process (nannies, scheduler), is not shown.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

#: Loggers of the cluster's shutdown chatter.
_LOGGERS = ("distributed", "tornado", "asyncio")


def ignore_sigint_plugin() -> Any:
    """A worker plugin: the worker process ignores SIGINT (the terminal's Ctrl-C is for the
    run, which stops the cluster itself). Every worker, also ones the nannies restart."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class IgnoreSigint(WorkerPlugin):
        idempotent = True

        def setup(self, worker: Any) -> None:
            import signal
            import threading

            # plugins run on the worker's event loop: the process's main thread under a nanny
            if threading.current_thread() is threading.main_thread():
                signal.signal(signal.SIGINT, signal.SIG_IGN)

    return IgnoreSigint()


def silence_logs() -> None:
    """Show nothing the cluster logs from now on in this process (it is being closed)."""
    for name in _LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """Show nothing the cluster logs in this process within the block; levels restored after
    (the Python API may start another run in the same process)."""
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    silence_logs()
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def silence_workers(client: Any) -> None:
    """Silence the workers' logs: the run is ending (done, failed or interrupted), and what
    they log while their tasks are cancelled and they are closed is noise."""
    if client.status == "running":
        with contextlib.suppress(Exception):  # best effort: a dead worker is no reason to fail
            client.run(silence_logs, on_error="ignore")


@contextlib.contextmanager
def stopping(client: Any, own: bool) -> Iterator[None]:
    """The block that closes a run's client (and, ``own``, curator's own cluster): for its
    own cluster, the workers are silenced first and nothing logged here is shown."""
    if not own:
        yield
        return
    with quiet_logs():
        silence_workers(client)
        yield
