"""How curator reaches a Dask cluster: the throwaway TLS credentials of the local cluster it
starts, a checked connection to a scheduler someone else started (a certificate or protocol
mismatch is one line naming the setting to fix), and the plugins every worker gets (secrets
masked in its logs, progress metrics for the dashboard, no statistical profiler).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable
from typing import Any

from curator.base.errors import ConfigError, CuratorError
from curator.base.redact import redact
from curator.core.tls import TLSFiles, dask_config_tls, is_loopback, scheduler_address


def private_security() -> Any:
    """Dask ``Security`` with a CA, certificate and key made in memory for one local cluster
    (``Security.temporary``), TLS required on every connection: a client or worker without
    them (another user of the machine) is refused."""
    from distributed.security import Security

    try:
        return Security.temporary()  # require_encryption=True
    except ImportError as e:  # pragma: no cover - cryptography comes with the dask extra
        raise CuratorError("executor 'dask' needs the 'cryptography' package to secure its "
                           "local cluster: pip install 'curator-pipeline[dask]'") from e


def check_local_dashboard(address: str | None) -> None:
    """The local cluster's dashboard has no authentication: loopback or off."""
    if address is None:
        return
    if not is_loopback(address):
        raise ConfigError(
            f"executor.dashboard_address '{address}': the local Dask cluster's dashboard has "
            "no authentication and would be reachable beyond this machine; give "
            "127.0.0.1:PORT (reach it through an SSH tunnel) or null")


def connect(address: str | None, scheduler_file: str | None, tls: TLSFiles | None,
             log: Callable[[str], None] | None) -> Any:
    """A Client of an existing scheduler. A plain ``tcp://`` scheduler on a network address
    gets one warning line (anyone who reaches it runs code on every worker); a TLS one without
    certificates, or whose handshake fails, one error line naming the file to fix."""
    from distributed import Client

    addr = scheduler_address(address, scheduler_file)
    shown = addr or scheduler_file
    if addr and addr.startswith("tls://") and tls is None and not dask_config_tls():
        raise ConfigError(f"dask scheduler {addr} speaks TLS: give executor.tls: {{ca_file, "
                          "cert, key}} (certificates from 'curator tls-certs', docs/cluster.md)")
    if addr and tls is not None and not addr.startswith("tls://"):
        raise ConfigError(f"executor.tls is set but dask scheduler {addr} does not speak TLS; "
                          "start it with --protocol tls and the certificates (docs/cluster.md)")
    plain = addr is not None and (addr.startswith("tcp://") or "://" not in addr)
    if addr and tls is None and plain and not is_loopback(addr) and log:
        log(f"warning: dask scheduler {addr} is plain TCP on a network address: anyone who can "
            "reach it can run code on every worker; use mutual TLS (executor.tls, "
            "docs/cluster.md)")
    try:
        return Client(address=address, scheduler_file=scheduler_file,
                      security=tls.security() if tls else None)
    except (OSError, TypeError) as e:
        ssl_err = next((x for x in _chain(e) if isinstance(x, ssl.SSLError)), None)
        if isinstance(ssl_err, ssl.SSLCertVerificationError) and tls:
            raise CuratorError(
                f"dask scheduler {shown}: its certificate is not signed by the CA in "
                f"executor.tls.ca_file ({tls.ca_file}): {ssl_err.verify_message}") from None
        if ssl_err is not None and tls:
            raise CuratorError(
                f"dask scheduler {shown} refused the certificate in executor.tls.cert "
                f"({tls.cert}): it is not signed by the CA the cluster trusts "
                f"({ssl_err.reason or ssl_err})") from None
        if isinstance(e, TypeError) and "TLS" in str(e):  # Dask's config names half a setup
            raise ConfigError(f"dask scheduler {shown} speaks TLS but Dask's configuration "
                              "gives no client certificate: set executor.tls: {ca_file, cert, "
                              "key}") from None
        if isinstance(e, TypeError):
            raise
        why = " ".join(str(e).split())[:300] or type(e).__name__
        raise CuratorError(f"dask scheduler {shown}: cannot connect ({why})") from None


class RedactingFilter(logging.Filter):
    """A log filter that masks secrets (:func:`~curator.base.redact.redact`) in each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            msg = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler
            return True
        record.msg, record.args = redact(msg), ()
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


def redact_log_handlers() -> None:
    """Put a :class:`RedactingFilter` on every log handler of this process (idempotent)."""
    loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values()
                                      if isinstance(lg, logging.Logger))]
    for lg in loggers:
        for h in lg.handlers:
            if not any(isinstance(f, RedactingFilter) for f in h.filters):
                h.addFilter(RedactingFilter())


def redacting_plugin() -> Any:
    from distributed.diagnostics.plugin import WorkerPlugin

    class RedactLogs(WorkerPlugin):
        idempotent = True

        def setup(self, worker: Any) -> None:
            redact_log_handlers()

    return RedactLogs()


def progress_plugin() -> Any:
    from distributed.diagnostics.plugin import WorkerPlugin

    from curator.core.progress import dask_worker_metrics

    class ProgressMetrics(WorkerPlugin):
        idempotent = True

        def setup(self, worker: Any) -> None:
            worker.metrics.update(dask_worker_metrics())

    return ProgressMetrics()


def no_profiler_plugin() -> Any:
    """Stop each worker's statistical profiler (``distributed.worker.profile``): every 10 ms
    it takes the frames of the thread running a task and frees them later on the event loop
    thread, so a frame that has returned meanwhile frees its locals there. resiliparse's
    trees and nodes may only be freed by the thread that made them (elsewhere: a printed
    "HTMLTreePy is unsendable, but is being dropped on another thread" and a leaked tree, 4
    in a 3,539-page run). Also the sampling's own CPU. The dashboard's Profile page stays
    empty; every other page works."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class NoProfiler(WorkerPlugin):
        idempotent = True

        def setup(self, worker: Any) -> None:
            pc = worker.periodic_callbacks.pop("profile", None)
            if pc is not None:
                pc.stop()

    return NoProfiler()


def _chain(err: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    e: BaseException | None = err
    while e is not None and e not in out:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out
