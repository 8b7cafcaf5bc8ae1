"""Liveness between MPI ranks: a rank whose node is cut off, powered down or stopped leaves the
others waiting in a collective for ever (MPI itself notices nothing while TCP retransmits). A
small heartbeat on a communicator of its own bounds that wait: rank 0 and every other rank
exchange a message every ``beat_s``; a peer not heard from for ``timeout_s`` is lost, and the
rank that notices prints one line naming the peer's host and stops every rank with
``MPI_Abort``. The beats flow through the whole run (stages, queue, collectives), so no wait
anywhere can outlast the deadline, and a long shard is never mistaken for a lost node."""

from __future__ import annotations

import array
import atexit
import faulthandler
import fcntl
import os
import stat
import sys
import termios
import threading
import time
from collections.abc import Callable
from typing import Any

_TAG_BEAT = 81
_TAG_BYE = 82


class PeerWatch:
    """Heartbeats between rank 0 and every other rank of ``comm`` (a star: rank 0 watches all,
    the others watch rank 0, so the cost is two small messages per rank per beat).

    ``hosts`` names each rank's host for the message; ``on_lost`` (for tests) replaces the
    default end: one line on stderr, then ``MPI_Abort``."""

    def __init__(
        self,
        comm: Any,
        timeout_s: float,
        hosts: list[str],
        beat_s: float | None = None,
        on_lost: Callable[[str], None] | None = None,
    ) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.timeout_s = timeout_s
        self.beat_s = beat_s or min(2.0, max(0.2, timeout_s / 10))
        self.hosts = hosts
        self.on_lost = on_lost or self._abort
        peers = range(1, self.size) if self.rank == 0 else [0]
        now = time.monotonic()
        self._last = {p: now for p in peers}  # peer -> when last heard from
        self._sends: list[Any] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="curator-mpi-liveness", daemon=True)

    def start(self) -> PeerWatch:
        if self._last:
            self._thread.start()
            # a program that never closes its executor still says goodbye before mpi4py's
            # own exit hook finalizes MPI (hooks run last registered first)
            atexit.register(self.stop)
        return self

    def stop(self) -> None:
        """Tell the watched peers this rank ends normally (so they stop expecting beats), then
        stop beating. Waits at most a few beats for those messages to leave."""
        if not self._thread.is_alive():
            return
        self._stop.set()
        self._thread.join()
        with self._lock:
            byes = [self.comm.isend(None, dest=p, tag=_TAG_BYE) for p in self._last]
        deadline = time.monotonic() + 2 * self.beat_s
        while byes and time.monotonic() < deadline:
            byes = [r for r in byes if not r.Test()]
            if byes:
                time.sleep(0.005)

    def _loop(self) -> None:
        while not self._stop.wait(self.beat_s):
            with self._lock:
                self._beat()
                self._drain()
                lost = [p for p, t in self._last.items() if time.monotonic() - t > self.timeout_s]
            if lost:
                self.on_lost(self.message(lost))
                return

    def _beat(self) -> None:
        # beats to a cut-off peer never complete: keep only the ones still pending
        self._sends = [r for r in self._sends if not r.Test()]
        for p in self._last:
            self._sends.append(self.comm.isend(None, dest=p, tag=_TAG_BEAT))

    def _drain(self) -> None:
        MPI = sys.modules["mpi4py.MPI"]
        status = MPI.Status()
        while self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG, status=status):
            src, tag = status.Get_source(), status.Get_tag()
            self.comm.recv(source=src, tag=tag)
            if tag == _TAG_BYE:
                self._last.pop(src, None)
            elif src in self._last:
                self._last[src] = time.monotonic()

    def message(self, lost: list[int]) -> str:
        """The one line for peers ``lost``, naming their hosts and this rank's: when rank 0
        hears from no other rank (of several) its own node is the one cut off."""

        def who(r: int) -> str:
            return f"rank {r} on host {self.hosts[r]}"

        if self.rank == 0 and len(lost) == self.size - 1 > 1:
            hosts = ", ".join(sorted({self.hosts[r] for r in lost}))
            what = (
                f"MPI {who(0)} heard from no other rank (hosts {hosts}) for "
                f"{self.timeout_s:g} s: host {self.hosts[0]} is down or cut off"
            )
        elif len(lost) == 1:
            what = (
                f"MPI {who(lost[0])} not heard from by {who(self.rank)} for "
                f"{self.timeout_s:g} s (node down, network cut or process stopped)"
            )
        else:
            hosts = ", ".join(sorted({self.hosts[r] for r in lost}))
            what = (
                f"MPI ranks {', '.join(map(str, lost))} on hosts {hosts} not heard from by "
                f"{who(self.rank)} for {self.timeout_s:g} s (nodes down, network cut or "
                "processes stopped)"
            )
        return (
            f"{what}; stopped every rank; rerun the same command to resume (deadline: "
            "executor.peer_timeout_s)"
        )

    def _abort(self, line: str) -> None:
        sys.stderr.write(f"curator: error: {line}\n")
        sys.stderr.flush()
        _read_by_reader(2, 2.0)
        # MPICH prints its own "Abort(1) on node ..." line on this process's stderr: silence it
        # after ours, so the user reads one line
        devnull = open(os.devnull, "w")  # noqa: SIM115 - lives until the process ends
        os.dup2(devnull.fileno(), 2)
        # a rank cut off from mpiexec cannot deliver its abort, and MPI_Abort may then return
        # an error or block: this process ends regardless, within seconds
        faulthandler.dump_traceback_later(5, exit=True, file=devnull)
        try:
            # on COMM_WORLD, which the process manager ends at once; on another communicator
            # MPICH first tells each member, and waits for ever for the one that is cut off
            sys.modules["mpi4py.MPI"].COMM_WORLD.Abort(1)
        finally:
            os._exit(1)


def _read_by_reader(fd: int, deadline_s: float) -> bool:
    """Wait (at most ``deadline_s``) until the process at the other end of pipe ``fd`` has
    read all that was written to it. mpiexec's proxy reads a rank's stderr in the same loop
    that takes its abort: a line still in the pipe when the abort arrives is lost with the
    killed rank. Not a pipe (a terminal, a file): nothing to wait for."""
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return True
        pending = array.array("i", [0])
        end = time.monotonic() + deadline_s
        while True:
            fcntl.ioctl(fd, termios.FIONREAD, pending)
            if pending[0] == 0:
                return True
            if time.monotonic() >= end:
                return False
            time.sleep(0.005)
    except OSError:
        return False


# --- Dask: the same deadline for the client's connection to its scheduler -------------------

#: Dask's TCP deadline needs at least this many seconds (ten keep-alive probes and one idle)
DASK_MIN_TCP_S = 11


def dask_tcp_deadline(timeout_s: float) -> Any:
    """Set Dask's ``distributed.comm.timeouts.tcp`` (kernel keep-alive and ``TCP_USER_TIMEOUT``
    on every connection this process makes) to ``timeout_s``; returns the setting, whose
    ``__exit__`` restores the previous value. Without it a silent peer holds a connection
    until Dask's 30 s, or TCP's ~15 minutes for data in flight."""
    import dask.config

    seconds = max(DASK_MIN_TCP_S, int(timeout_s))
    return dask.config.set({"distributed.comm.timeouts.tcp": f"{seconds}s"})


def connection_lost_errors() -> tuple[type[BaseException], ...]:
    """What waiting on a Dask future raises when the scheduler connection is gone: a closed
    comm, or the futures the client cancelled when it lost its scheduler."""
    import asyncio
    import concurrent.futures

    from distributed.comm.core import CommClosedError

    return (CommClosedError, asyncio.CancelledError, concurrent.futures.CancelledError)


def is_cancel(err: BaseException) -> bool:
    import asyncio
    import concurrent.futures

    return isinstance(err, asyncio.CancelledError | concurrent.futures.CancelledError)


def scheduler_lost_line(address: str, timeout_s: float) -> str:
    """The one line for a run whose client lost its Dask scheduler."""
    return (
        f"dask: lost the connection to the scheduler {address}: it ended, or its node was "
        f"down or cut off for executor.peer_timeout_s ({timeout_s:g} s); the scheduler "
        "forgets the tasks of a client it lost, so this run stops here: finished shards are "
        "kept, rerun the same command once the scheduler answers"
    )


def scheduler_cancelled_line(address: str) -> str:
    """The one line for a run whose tasks the scheduler cancelled while it still answers."""
    return (f"dask: the scheduler {address} cancelled this run's tasks (restarted, or cancelled "
            "by another client); finished shards are kept, rerun the same command")


def dashboard_where(client: Any, link: str | None) -> tuple[str | None, str]:
    """The dashboard URL as it answers, and where to open it. Dask builds its link from the
    scheduler's address and the dashboard's port, so a dashboard bound to loopback on another
    node was printed at the node's address, where nothing answers. This asks the scheduler
    where its HTTP server listens; a loopback one is named with the node that serves it and
    the SSH tunnel that reaches it."""
    if not link:
        return link, ""
    try:
        bound = client.run_on_scheduler(_http_address)
    except Exception:  # a scheduler that refuses to run our function: keep Dask's link
        return link, ""
    if not bound or bound[0] in ("", "0.0.0.0", "::"):  # noqa: S104 - reading, not binding
        return link, ""
    from urllib.parse import urlsplit, urlunsplit

    host, port = bound
    parts = urlsplit(link)
    shown = f"[{host}]" if ":" in host else host
    url = urlunsplit((parts.scheme, f"{shown}:{port}", parts.path, parts.query, ""))
    node = client.scheduler.address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    local = ("127.0.0.1", "::1", "localhost")
    if host in local and node not in local:
        return url, (
            f" on the scheduler's node {node} only (from elsewhere: "
            f"ssh -N -L {port}:127.0.0.1:{port} {node})"
        )
    return url, ""


def _http_address(dask_scheduler: Any = None) -> tuple[str, int] | None:
    server = getattr(dask_scheduler, "http_server", None)
    address, port = getattr(server, "address", None), getattr(server, "port", None)
    return (str(address), int(port)) if address is not None and port else None
