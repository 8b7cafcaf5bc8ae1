"""A local Dask cluster that stops in one line: Ctrl-C and the end of a run.

Ctrl-C in a terminal reaches the whole process group: the cluster's worker processes too, each
of which then stopped on its own and logged the broken connections, cancelled tasks and
killed processes of the shutdown (about 70 lines of tracebacks under the one line curator
prints). The worker processes of curator's own cluster ignore SIGINT, so only the run reacts
to it (it cancels its tasks and closes the cluster), and what the cluster logs while it is
being closed, in the workers and in this process (nannies, scheduler), is not shown. During a
run, a dashboard tab closed mid-session is not a Bokeh traceback (:class:`ClosedTabFilter`), and
at its end curator's own workers are given time to exit rather than killed
(:func:`close_workers`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
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


#: Loggers through which a closed dashboard tab arrived as a 25-line traceback.
DASHBOARD_LOGGERS = ("tornado.application", "bokeh.server.protocol_handler",
                     "bokeh.server.views.ws")
_BOKEH_CONNECTION = os.path.join("bokeh", "server", "connection.py")
#: Seconds a worker of our own cluster gets to exit: Dask's 4 s ran out on a busy machine once
#: torch was imported ("Worker process still alive after 4.0 seconds, killing").
WORKER_EXIT_S = 30.0


def closed_tab(exc: BaseException | None) -> bool:
    """Whether ``exc`` is a browser leaving the dashboard: its websocket closed before or while
    Bokeh set up the session (Bokeh asserts the session exists), or mid-message."""
    if exc is None:
        return False
    if type(exc).__name__ in ("WebSocketClosedError", "StreamClosedError"):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if isinstance(exc, AssertionError) and \
                tb.tb_frame.f_code.co_filename.endswith(_BOKEH_CONNECTION):
            return True
        tb = tb.tb_next
    return False


class ClosedTabFilter(logging.Filter):
    """Drops a dashboard logger's record whose exception is a closed tab (:func:`closed_tab`);
    every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and closed_tab(record.exc_info[1]))


def quiet_dashboard() -> None:
    """Install :class:`ClosedTabFilter` on the dashboard's loggers (once)."""
    for name in DASHBOARD_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ClosedTabFilter) for f in logger.filters):
            logger.addFilter(ClosedTabFilter())


def close_workers(cluster: Any) -> None:
    """Every worker of a cluster we started asked to close, given :data:`WORKER_EXIT_S` to exit
    (``cluster.close()`` then finds them closed instead of killing them after 4 s)."""

    async def close_all() -> None:
        await asyncio.gather(*(w.close(timeout=WORKER_EXIT_S) for w in
                               list(cluster.workers.values())), return_exceptions=True)

    try:
        cluster.sync(close_all, callback_timeout=WORKER_EXIT_S + 5)
    except Exception:  # noqa: S110 - the cluster's own close still runs
        pass
