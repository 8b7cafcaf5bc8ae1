"""Executors run a function over many items: in this process, on a Dask cluster, or across MPI
ranks. That one verb, ``map``, is all stages need, which is why one pipeline gives the same bytes
on all three: the work is keyed on shards, never on how many workers there are."""

from __future__ import annotations

import functools
import logging
import os
import socket
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

from curator.base.errors import CuratorError, StageError
from curator.core.dask_quiet import (
    close_workers,
    ignore_sigint_plugin,
    quiet_dashboard,
    silence_workers,
    stopping,
)
from curator.core.dask_setup import (
    check_local_dashboard,
    connect,
    no_profiler_plugin,
    private_security,
    progress_plugin,
    redacting_plugin,
)
from curator.core.liveness import (
    PeerWatch,
    connection_lost_errors,
    dashboard_where,
    dask_tcp_deadline,
    is_cancel,
    scheduler_cancelled_line,
    scheduler_lost_line,
)
from curator.core.tls import TLSFiles, tls_files
from curator.storage.atomic import set_run_id

Progress = Callable[[Any], None]


class Executor:
    """Runs ``fn`` over ``items`` and returns results in item order."""

    kind = "base"
    rank = 0
    size = 1
    #: the run whose tasks this executor runs ("" outside a run): :meth:`set_run_id`
    run_id = ""
    #: seconds a peer (a rank, the scheduler, a server a stage uses) may stay silent
    peer_timeout_s = 120.0

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any],
            progress: Progress | None = None) -> list[Any]:
        raise NotImplementedError

    def broadcast(self, value: Any) -> Any:
        """``value`` from the root process, on every process."""
        return value

    def _submit(self, fn: Callable[[Any], Any], items: list[Any], label: str | None) -> list[Any]:
        """One task per item, named on the dashboard by stage and shard: the key
        ``("curator:<stage>", "<shard>", "<token>")`` groups a stage's shards in the Progress
        and Task Stream views, and a span ``curator:<stage>`` files their time under the
        stage on the Fine Performance Metrics page."""
        import uuid

        from distributed import span

        if self.run_id:
            fn = functools.partial(_in_run, self.run_id, fn)
        if not label:
            return self.client.map(fn, items, pure=False)
        prefix = f"curator:{label}"
        token = uuid.uuid4().hex[:8]  # a stage's map may run twice (phases): never reuse keys
        keys = [(prefix, str(getattr(it, "name", None) or i), token)
                for i, it in enumerate(items)]
        if len(set(keys)) < len(keys):  # items without distinct names: number them
            keys = [(prefix, f"{i}:{k[1]}", token) for i, k in enumerate(keys)]
        with span(prefix):
            return self.client.map(fn, items, key=keys)

    def on_every_host(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` here and once on every other host that runs tasks (cleanup that
        only a process on that host can do, such as checking whether a PID is alive)."""
        fn(*args)

    def barrier(self) -> None:
        pass

    def set_run_id(self, run_id: str) -> None:
        """Name the run in every process that writes its files (temporaries carry it)."""
        set_run_id(run_id)
        self.run_id = run_id

    def each_process(self, fn: Callable[..., Any], *args: Any) -> list[tuple[str, Any]]:
        """``fn(*args)`` in this process (first) and in every other process that runs tasks
        (each Dask worker, each MPI rank), as (who, result) pairs; ``who`` names the process
        and its host for a message. Every MPI rank must call it (a collective)."""
        return [(f"host {_hostname()} (this process)", fn(*args))]

    def close(self) -> None:
        pass

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LocalExecutor(Executor):
    """Everything in this process, in order: the one to debug with (pdb works)."""

    kind = "local"

    def __init__(self, peer_timeout_s: float = 120.0) -> None:
        self.peer_timeout_s = peer_timeout_s

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any],
            progress: Progress | None = None) -> list[Any]:
        out = []
        for item in items:
            r = fn(item)
            if progress:
                progress(r)
            out.append(r)
        return out


class DaskExecutor(Executor):
    """A Dask cluster: a new LocalCluster of ``workers`` processes, or any scheduler given by
    ``address`` or ``scheduler_file``, reached over mutual TLS with ``tls`` (or Dask's own
    ``distributed.comm.tls`` configuration)."""

    kind = "dask"

    def __init__(self, workers: int | None = None, address: str | None = None,
                 scheduler_file: str | None = None, threads_per_worker: int = 1,
                 memory_limit: str = "auto", dashboard_address: str | None = "127.0.0.1:0",
                 log: Callable[[str], None] | None = None, tls: TLSFiles | None = None,
                 no_workers_timeout_s: float = 60.0, peer_timeout_s: float = 120.0) -> None:
        try:
            from distributed import Client, LocalCluster
        except ImportError as e:  # pragma: no cover - depends on install
            raise CuratorError(
                "executor 'dask' needs the dask extra: pip install 'curator-pipeline[dask]'"
            ) from e
        self.cluster = None
        self.no_workers_timeout_s = no_workers_timeout_s
        self.peer_timeout_s = peer_timeout_s
        # a scheduler that stops answering (node down, network cut) ends this client's
        # connection after peer_timeout_s instead of TCP's ~15 minutes; set before connecting
        self._tcp_deadline = dask_tcp_deadline(peer_timeout_s)
        try:
            if address or scheduler_file:
                self.client = connect(address, scheduler_file, tls, log)
            else:
                n = workers or os.cpu_count() or 1
                check_local_dashboard(dashboard_address)
                # Loopback is reachable by every account on the machine, and a Dask scheduler
                # runs what any client sends: the cluster's own processes alone hold credentials
                # (throwaway mutual TLS made in memory here, passed to the workers by their nanny
                # processes, never written where another user can read them)
                security = tls.security() if tls else private_security()
                quiet_dashboard()  # its Bokeh server runs in this process
                self.cluster = LocalCluster(
                    n_workers=n, threads_per_worker=threads_per_worker, processes=True,
                    memory_limit=memory_limit, dashboard_address=dashboard_address,
                    host="127.0.0.1", protocol="tls://", security=security,
                )
                self.client = Client(self.cluster, security=security)
        except BaseException:  # nothing connected: Dask's setting back as it was
            self._tcp_deadline.__exit__(None, None, None)
            raise
        # workers log a failed task with its exception; mask secrets there too (every worker,
        # also ones started or restarted later)
        self.client.register_plugin(redacting_plugin(), name="curator-redact-logs")
        # what each worker's shards in flight have read, as columns of the dashboard's
        # Workers page (core/progress.py); every worker, also ones started later
        self.client.register_plugin(progress_plugin(), name="curator-progress")
        self.client.register_plugin(no_profiler_plugin(), name="curator-no-profiler")
        if self.cluster is not None:  # Ctrl-C in the terminal is for the run, not each worker
            self.client.register_plugin(ignore_sigint_plugin(), name="curator-ignore-sigint")
        self.size = max(1, len(self.client.scheduler_info().get("workers", {})) or (workers or 1))
        # dashboard_address: null turns the LocalCluster's dashboard off, but the scheduler
        # still serves HTTP (health, metrics) and client.dashboard_link still names it.
        off = self.cluster is not None and dashboard_address is None
        link, where = (None, "") if off else dashboard_where(self.client,
                                                             self.client.dashboard_link)
        self.dashboard_link: str | None = link
        if log:
            # the Workers page shows each worker's shard in flight (core/progress.py)
            workers_page = (f" (shards in flight: {self.dashboard_link.rsplit('/', 1)[0]}"
                            "/workers)" if self.dashboard_link else "")
            log(f"dask scheduler {self.client.scheduler.address}; "
                f"dashboard {self.dashboard_link or 'off'}{workers_page}{where}")

    #: seconds between checks for live workers while waiting for results
    poll_s = 1.0

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any],
            progress: Progress | None = None) -> list[Any]:
        from distributed import TimeoutError as DaskTimeout
        from distributed import wait

        if not items:
            return []
        futures = self._submit(fn, list(items), getattr(progress, "stage_id", None))
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(futures)
        pending = set(futures)
        alone_since: float | None = None  # when the scheduler was first seen without workers
        self._answered = time.monotonic()  # when the scheduler last answered
        try:
            while pending:
                try:
                    done, pending = wait(pending, timeout=self.poll_s,
                                         return_when="FIRST_COMPLETED")
                except (DaskTimeout, TimeoutError):
                    alone_since = self._check_workers(alone_since)
                    continue
                alone_since = None
                for fut in sorted(done, key=lambda f: index[f.key]):
                    r = fut.result()
                    results[index[fut.key]] = r
                    if progress:
                        progress(r)
        except connection_lost_errors() as e:
            if self.client.status == "running":
                if not is_cancel(e):
                    raise  # a task's own error
                raise StageError(scheduler_cancelled_line(self.client.scheduler.address)) from None
            raise StageError(self._lost_line()) from None
        except BaseException as e:
            if self.client.status == "running":
                if isinstance(e, KeyboardInterrupt) and self.cluster is not None:
                    silence_workers(self.client)  # Ctrl-C: our own cluster stops quietly
                self.client.cancel(futures)
            raise
        return results

    def _lost_line(self) -> str:
        address = getattr(self.client.scheduler, "address", None) or "?"
        return scheduler_lost_line(address, self.peer_timeout_s)

    def set_run_id(self, run_id: str) -> None:
        # each task names its run where it runs (:func:`_in_run`): workers may serve other
        # clients' runs too, so the id travels with the task, not as the worker's state
        set_run_id(run_id)
        self.run_id = run_id

    def each_process(self, fn: Callable[..., Any], *args: Any) -> list[tuple[str, Any]]:
        out = [(f"host {_hostname()} (this process, the Dask client)", fn(*args))]
        workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
        if workers:
            # a worker that cannot answer now is left to the run itself (it is dropped, or
            # the run stops naming the scheduler): only answers are checked
            got = self.client.run(fn, *args, workers=list(workers), on_error="ignore")
            for addr in sorted(got):
                host = workers.get(addr, {}).get("host", addr)
                out.append((f"host {host} (Dask worker {addr})", got[addr]))
        return out

    def on_every_host(self, fn: Callable[..., Any], *args: Any) -> None:
        fn(*args)
        try:
            workers = self.client.scheduler_info(n_workers=-1).get("workers", {})
            one_per_host: dict[str, str] = {}
            for addr, w in workers.items():
                one_per_host.setdefault(str(w.get("host", addr)), addr)
            if one_per_host:
                self.client.run(fn, *args, workers=list(one_per_host.values()))
        except Exception:  # noqa: S110 - best effort: a clean-up on other hosts never fails a run
            pass

    def _check_workers(self, alone_since: float | None) -> float | None:
        """While results are awaited: fail when no worker has been alive for
        ``no_workers_timeout_s`` (a scheduler whose workers were all killed waits for ever)."""
        address = getattr(self.client.scheduler, "address", "?")
        if self.client.status != "running":
            # a client that lost its scheduler has already cancelled every task it submitted:
            # reconnecting cannot bring this run back
            raise StageError(self._lost_line())
        try:
            # bounded: a request to an unreachable node would wait for Dask's connect timeout
            info = self.client.sync(self.client.scheduler.identity, n_workers=0,
                                    callback_timeout=min(5.0, self.peer_timeout_s))
            self._answered = time.monotonic()
        except (TimeoutError, OSError):
            if (self.client.status != "running"
                    or time.monotonic() - self._answered >= self.peer_timeout_s):
                raise StageError(self._lost_line()) from None
            return alone_since
        if info.get("n_workers", 1):
            return None
        now = time.monotonic()
        if alone_since is None:
            return now
        if now - alone_since >= self.no_workers_timeout_s:
            raise StageError(
                f"dask: no worker alive for {self.no_workers_timeout_s:g} s on the scheduler "
                f"{address}; the workers were killed or never started (start workers, or "
                "raise executor.no_workers_timeout_s); finished shards are kept")
        return alone_since

    def close(self) -> None:
        lost = self.client.status != "running"
        if lost:
            # closing a client that lost its scheduler cancels its reconnection, which Dask
            # logs as an error with a traceback: the run's one line has said it all
            logging.disable(logging.CRITICAL)
        try:
            with stopping(self.client, own=self.cluster is not None):
                try:
                    # a scheduler that is gone must not hold the exit for Dask's default minute
                    self.client.close(timeout=min(5.0, self.peer_timeout_s))
                except Exception:  # noqa: S110 - closing a client whose scheduler is gone
                    pass
                if self.cluster is not None:
                    close_workers(self.cluster)
                    self.cluster.close()
        finally:
            if lost:
                logging.disable(logging.NOTSET)
        self._tcp_deadline.__exit__(None, None, None)


class MPIExecutor(Executor):
    """SPMD across MPI ranks: every rank runs the driver and ``map`` all-gathers the results.

    Items are handed out from a shared queue, not striped ``r, r+size, ...``: each rank asks
    rank 0 for the next item index whenever it is free, so one huge shard keeps one rank busy
    while the others drain the rest (datatrove #338, stragglers). Rank 0 answers from a small
    thread that polls (every 2 ms after a request, backing off to 20 ms while none comes: each
    wake costs ~20 us of CPU, so a fixed 2 ms poll cost ~1% of a core for as long as the other
    ranks worked; see ``poll_share``), so it computes items too and no MPI progress thread has
    to spin a core; a rank waiting for its reply sleeps between checks too. Outputs are keyed
    on shards, so which rank ran an item never changes a byte. A failure on any rank stops the
    queue and fails all ranks with the same message instead of leaving the others waiting in a
    collective. A rank that waits for the others at a collective (the end of a stage group)
    sleeps instead of spinning: MPICH's blocking collectives busy-poll a core for as long as
    the slowest rank still works."""

    kind = "mpi"
    _TAG_REQ = 71
    _TAG_REP = 72
    #: rank 0 polls for requests every ``poll_share`` of the time since the last one, at least
    #: every ``poll_max_s`` and at most every ``poll_s``: the latency it adds is ~5% of a short
    #: item's time and 20 ms for a long one, while a fixed 2 ms poll woke rank 0 ~500 times a
    #: second for as long as the other ranks worked on their shards
    poll_s = 0.002
    poll_max_s = 0.02
    poll_share = 0.05
    #: longest sleep between checks while a rank waits for the others at a collective
    wait_poll_max_s = 0.02

    def __init__(self, schedule: str = "dynamic", peer_timeout_s: float = 120.0) -> None:
        try:
            from mpi4py import MPI
        except ImportError as e:  # pragma: no cover
            raise CuratorError(
                "executor 'mpi' needs the mpi extra: pip install 'curator-pipeline[mpi]'"
            ) from e
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        # the queue talks on its own communicator so it never mixes with the collectives
        self.qcomm = self.comm.Dup()
        threaded = MPI.Query_thread() >= MPI.THREAD_MULTIPLE
        #: each rank's host name, to name the host of a lost rank
        self.hosts: list[str] = self.comm.allgather(socket.gethostname())
        # a rank cut off mid-run would leave the others in a collective for ever: heartbeats
        # on a communicator of their own bound every wait to peer_timeout_s
        self.watch = (PeerWatch(self.comm.Dup(), peer_timeout_s, self.hosts).start()
                      if threaded and self.size > 1 else None)
        self.schedule = schedule if (schedule == "static" or threaded) else "static"
        #: item indices this rank ran in the last ``map`` (for tests and the balance report)
        self.last_taken: list[int] = []
        #: times rank 0's queue thread woke up in the last ``map`` (its CPU cost: tests)
        self.last_polls = 0

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any],
            progress: Progress | None = None) -> list[Any]:
        items = list(items)
        if self.size > 1 and self.schedule == "dynamic" and items:
            mine, error = self._run_dynamic(fn, items, progress)
        else:
            mine, error = self._run(fn, items, progress, iter(range(self.rank, len(items),
                                                                  self.size)))
        self.last_taken = [i for i, _ in mine]
        self._arrive()
        gathered = self.comm.allgather((error, mine))
        errors = [e for e, _ in gathered if e]
        if errors:
            raise StageError(errors[0])
        results: list[Any] = [None] * len(items)
        for _, part in gathered:
            for i, r in part:
                results[i] = r
        return results

    def _run(self, fn: Callable[[Any], Any], items: list[Any], progress: Progress | None,
             indices: Any, on_error: Callable[[], None] | None = None,
             ) -> tuple[list[tuple[int, Any]], str | None]:
        mine: list[tuple[int, Any]] = []
        for i in indices:
            try:
                r = fn(items[i])
            except CuratorError as e:
                if on_error:
                    on_error()
                return mine, str(e)
            except Exception as e:
                if os.environ.get("CURATOR_DEBUG"):
                    traceback.print_exc()
                if on_error:
                    on_error()
                return mine, f"rank {self.rank}: {type(e).__name__}: {e}"
            mine.append((i, r))
            if progress:
                progress(r)
        return mine, None

    def _run_dynamic(self, fn: Callable[[Any], Any], items: list[Any],
                     progress: Progress | None) -> tuple[list[tuple[int, Any]], str | None]:
        n = len(items)
        if self.rank != 0:
            def ask() -> Any:
                while True:
                    self.qcomm.send(True, dest=0, tag=self._TAG_REQ)
                    i = self._reply()
                    if i < 0:
                        return
                    yield i

            def give_up() -> None:
                # tell rank 0 to stop handing out work; it still owes this rank a final reply
                self.qcomm.send(False, dest=0, tag=self._TAG_REQ)
                self._reply()

            return self._run(fn, items, progress, ask(), on_error=give_up)

        state = {"next": 0, "stop": False}
        lock = threading.Lock()

        def take() -> int:
            with lock:
                if state["stop"] or state["next"] >= n:
                    return -1
                i = state["next"]
                state["next"] += 1
                return i

        self.last_polls = 0

        def serve() -> None:
            finished = 0  # ranks that got their final "no more items"
            status = self.MPI.Status()
            last = time.monotonic()
            while finished < self.size - 1:
                if not self.qcomm.Iprobe(source=self.MPI.ANY_SOURCE, tag=self._TAG_REQ,
                                         status=status):
                    waited = time.monotonic() - last
                    time.sleep(min(self.poll_max_s, max(self.poll_s, waited * self.poll_share)))
                    self.last_polls += 1
                    continue
                src = status.Get_source()
                want = self.qcomm.recv(source=src, tag=self._TAG_REQ)
                if not want:
                    with lock:
                        state["stop"] = True
                i = take()
                self.qcomm.send(i, dest=src, tag=self._TAG_REP)
                last = time.monotonic()
                if i < 0:
                    finished += 1

        server = threading.Thread(target=serve, name="curator-mpi-queue", daemon=True)
        server.start()

        def own() -> Any:
            while (i := take()) >= 0:
                yield i

        def stop() -> None:
            with lock:
                state["stop"] = True

        try:
            return self._run(fn, items, progress, own(), on_error=stop)
        finally:
            server.join()

    def _reply(self) -> Any:
        """Rank 0's answer to this rank's request, sleeping between checks: a blocking
        ``recv`` in MPICH busy-polls a core until rank 0's queue thread next wakes."""
        delay = self.poll_s / 8  # rank 0 answers within its poll: at most poll_max_s
        while not self.qcomm.Iprobe(source=0, tag=self._TAG_REP):
            time.sleep(delay)
            delay = min(delay * 2, self.poll_s)
        return self.qcomm.recv(source=0, tag=self._TAG_REP)

    def _arrive(self) -> None:
        """Return once every rank has called this, sleeping between tests of a non-blocking
        barrier. A blocking ``Barrier``/``allgather`` in MPICH busy-polls: the rank that
        finished its shards first burnt a whole core (CPU seconds as large as the wait) until
        the slowest rank arrived. The collective that follows finds everyone there at once."""
        if self.size == 1:
            return
        req = self.comm.Ibarrier()
        delay = 0.0005
        while not req.Test():
            time.sleep(delay)
            delay = min(delay * 2, self.wait_poll_max_s)

    def broadcast(self, value: Any) -> Any:
        self._arrive()  # the other ranks wait (asleep) while rank 0 decides
        return self.comm.bcast(value, root=0)

    def each_process(self, fn: Callable[..., Any], *args: Any) -> list[tuple[str, Any]]:
        mine = (f"host {_hostname()} (MPI rank {self.rank})", fn(*args))
        self._arrive()
        return list(self.comm.allgather(mine))  # rank 0, the driver, first on every rank

    def barrier(self) -> None:
        self._arrive()

    def close(self) -> None:
        if self.watch is not None:
            self.watch.stop()


def _hostname() -> str:
    return socket.gethostname()


def _in_run(run_id: str, fn: Callable[[Any], Any], item: Any) -> Any:
    """``fn(item)`` in a worker, its files named after run ``run_id`` (temporaries carry it)."""
    set_run_id(run_id)
    return fn(item)


def make_executor(cfg: Any, log: Callable[[str], None] | None = None) -> Executor:
    """Build the executor named by the pipeline's ``executor`` section."""
    if cfg.type == "local":
        if cfg.workers and cfg.workers > 1 and log:
            # said, not ignored: this executor runs one shard at a time, whatever N asks for
            log(f"executor 'local' runs one shard at a time in this process; workers: "
                f"{cfg.workers} is for Dask (--executor dask --workers {cfg.workers}) or MPI "
                f"(mpiexec -n {cfg.workers} curator run ... --executor mpi)")
        return LocalExecutor(peer_timeout_s=cfg.peer_timeout_s)
    if cfg.type == "dask":
        return DaskExecutor(
            workers=cfg.workers, address=cfg.address, scheduler_file=cfg.scheduler_file,
            threads_per_worker=cfg.threads_per_worker, memory_limit=cfg.memory_limit,
            dashboard_address=cfg.dashboard_address, log=log,
            tls=tls_files(cfg.tls.model_dump() if cfg.tls else None),
            no_workers_timeout_s=cfg.no_workers_timeout_s, peer_timeout_s=cfg.peer_timeout_s,
        )
    if cfg.type == "mpi":
        ex = MPIExecutor(schedule=cfg.schedule, peer_timeout_s=cfg.peer_timeout_s)
        if ex.size == 1 and log:
            log("executor 'mpi' with one rank: start it with 'mpiexec -n N curator run ...'")
        return ex
    raise CuratorError(f"unknown executor type '{cfg.type}'")  # pragma: no cover
