"""What went wrong with a Redis connection, in words a user can act on.

redis-py turns every socket failure into a ``ConnectionError`` or ``TimeoutError`` whose text
varies with the call that met it; the original ``OSError`` stays in the exception chain. The
cause is read from that chain's *types*: refused, reset or closed, timed out, unreachable, a
name that does not resolve, and a TLS failure only when OpenSSL itself reported one (a
certificate not trusted, a peer that does not speak TLS, an alert). A connection that drops
while TLS is on raises ``SSLEOFError`` or ``SSLZeroReturnError``: that is the peer going away,
not TLS, and is reported as such.
"""

from __future__ import annotations

import errno
import re
import socket
import ssl
from typing import Any

#: ``host:port`` inside redis-py's messages ("Error 111 connecting to 10.0.0.5:7001.")
ADDR = re.compile(r"(?<![\w.-])(\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z0-9.-]+):(\d{2,5})\b")

#: OpenSSL errors that only mean "the transport went away": the peer died or closed
_SSL_GONE = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError)
#: ``OSError``s of the network (not of a file: a missing CA file is not a node's fault)
NETWORK_ERRORS = (ConnectionError, TimeoutError, socket.timeout, socket.gaierror, ssl.SSLError)


def chain(err: BaseException) -> list[BaseException]:
    """``err`` and the exceptions it was raised from or while handling (at most 8)."""
    out: list[BaseException] = []
    e: BaseException | None = err
    while e is not None and e not in out and len(out) < 8:
        out.append(e)
        e = e.__cause__ or e.__context__
    return out


def one_line(err: BaseException) -> str:
    """The error's text on one line, printable ASCII only: redis-py quotes the command in some
    messages, and the keys are binary."""
    text = re.sub(r"b'(?:[^'\\]|\\.)*'", "<key>", str(err))
    text = "".join(c if " " <= c <= "~" else " " for c in text)
    return " ".join(text.split())[:300]


def address_in(err: BaseException) -> str | None:
    """The ``host:port`` an error message names, if any."""
    for e in chain(err):
        m = ADDR.search(one_line(e))
        if m:
            return f"{m.group(1)}:{m.group(2)}"
    return None


def auth_problem(err: BaseException, auth: Any) -> str | None:
    """The user-facing reason when ``err`` is about credentials (``auth``: a ``RedisAuth``), else
    None."""
    from redis.exceptions import (
        AuthenticationError,
        AuthenticationWrongNumberOfArgsError,
        AuthorizationError,
        NoPermissionError,
    )

    secret = f"the password in ${auth.password_env}" if auth.password_env else "no password"
    user = f"user '{auth.username}'" if auth.username else "the default user"
    for e in chain(err):
        text = str(e)
        needs = (
            "NOAUTH" in text
            or "Authentication required" in text
            or "must be called with the client already authenticated" in text
        )
        if needs and not auth.password_env:
            return (
                f"the cluster requires a password ({one_line(e)}); name the environment "
                "variable that holds it in fuzzy_dedup's redis.password_env"
            )
        if (
            isinstance(e, (AuthenticationError, AuthenticationWrongNumberOfArgsError))
            or needs
            or "WRONGPASS" in text
        ):
            return (
                f"authentication failed for {user} with {secret} ({one_line(e)}); check "
                "redis.username and the password"
            )
        if isinstance(e, (AuthorizationError, NoPermissionError)):
            return (
                f"{user} is not allowed to run the commands fuzzy_dedup needs (EVAL, "
                f"HSETNX, HGET, HLEN, EXPIRE, INCRBY, SET, GET, EXISTS, SCAN, UNLINK, INFO, "
                f"CLUSTER INFO): {one_line(e)}"
            )
    return None


def tls_failure(err: BaseException) -> str | None:
    """The TLS failure (certificate, protocol, alert) in ``err``'s chain, else None. A
    connection that merely dropped while TLS was on is not one."""
    for e in chain(err):
        if isinstance(e, ssl.SSLCertVerificationError):
            return f"certificate not trusted: {e.verify_message or one_line(e)}"
        if isinstance(e, ssl.SSLError) and not isinstance(e, _SSL_GONE):
            return e.reason.lower().replace("_", " ") if e.reason else one_line(e)
    return None


def transport_cause(err: BaseException, timeout_s: float | None = None) -> str | None:
    """``connection refused`` / ``connection reset`` / ``timed out`` / ... for an error of the
    network below Redis (TLS failures excepted: :func:`tls_failure`), else None."""
    from redis.exceptions import TimeoutError as RedisTimeout

    took = f" after {timeout_s:g} s" if timeout_s else ""
    for e in chain(err):
        if isinstance(e, ConnectionRefusedError) or getattr(e, "errno", None) == errno.ECONNREFUSED:
            return "connection refused (nothing listens on that port: the server is not running)"
        if isinstance(
            e, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError, *_SSL_GONE)
        ):
            return "connection reset (the server closed it: it died, restarted or dropped us)"
        if isinstance(e, (socket.timeout, TimeoutError, RedisTimeout)):
            return f"timed out{took} (the host or its network is down, or the server hangs)"
        if isinstance(e, socket.gaierror):
            return f"host name not resolved ({e.strerror or one_line(e)})"
        if getattr(e, "errno", None) in (
            errno.EHOSTUNREACH,
            errno.ENETUNREACH,
            errno.EHOSTDOWN,
            errno.ENETDOWN,
        ):
            return f"host unreachable ({getattr(e, 'strerror', None) or one_line(e)})"
    for e in chain(err):  # by text: redis-py raises some of these without the OSError
        text = str(e)
        if "Connection refused" in text:
            return "connection refused (nothing listens on that port: the server is not running)"
        if "Connection closed by server" in text or "reset by peer" in text:
            return "connection reset (the server closed it: it died, restarted or dropped us)"
        if "Timeout" in text or "timed out" in text:
            return f"timed out{took} (the host or its network is down, or the server hangs)"
    return None


def is_connection_error(err: BaseException) -> bool:
    """Whether ``err`` is about reaching a node at all (not an error reply)."""
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeout

    return any(isinstance(e, (OSError, RedisConnectionError, RedisTimeout)) for e in chain(err))


def probe_failure(make: Any) -> BaseException | None:
    """Ping through ``make()`` (a fresh client); the exception, or None when it answered."""
    import redis

    try:
        make().ping()
    except (redis.RedisError, OSError) as e:
        return e
    return None


def answers_plain(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether ``host:port`` answers a plain-text ``PING`` as Redis does (``+PONG`` or an error
    reply such as ``-NOAUTH``): a server without TLS on that port."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as s:
            s.sendall(b"PING\r\n")
            return s.recv(1)[:1] in (b"+", b"-")
    except OSError:
        return False


def answers_tls(host: str, port: int, timeout_s: float = 2.0) -> bool:
    """Whether ``host:port`` completes a TLS handshake (certificates not checked: this only
    asks whether the port speaks TLS)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection((host, port), timeout=timeout_s) as s,
            ctx.wrap_socket(s, server_hostname=host),
        ):
            return True
    except (OSError, ValueError):
        return False


def unreachable_line(
    who: str, node: str | None, err: BaseException, tls_on: bool, timeout_s: float
) -> str:
    """The line for a node that could not be used (``who`` names it): a TLS failure only when
    OpenSSL reported one or the port answers in plain text, else the transport's cause
    (refused, reset, timed out...)."""
    fix = (
        "check redis.tls.enabled and redis.tls.ca_file / cert_file / key_file; nothing was "
        "marked done"
    )
    tls = tls_failure(err)
    if tls is not None:
        return f"{who}: TLS handshake failed: {tls}; {fix}"
    cause = transport_cause(err, timeout_s)
    host, _, port = (node or "").rpartition(":")
    if cause and port.isdigit():
        # a TLS client meets a plain port as a timeout, a plain client a TLS port as a reset:
        # ask the port itself which protocol it speaks
        wait = min(2.0, timeout_s)
        if tls_on and cause.startswith("timed out") and answers_plain(host, int(port), wait):
            return (
                f"{who}: TLS handshake failed: the node answers in plain text on that port "
                f"(no TLS there); {fix}"
            )
        if (
            not tls_on
            and cause.startswith("connection reset")
            and answers_tls(host, int(port), wait)
        ):
            return (
                f"{who}: the node speaks TLS only on that port and redis.tls.enabled is "
                "off; set it (and redis.tls.ca_file); nothing was marked done"
            )
    if cause is None:
        cause = f"{type(err).__name__}: {one_line(err)}"
    return f"{who} is down or unreachable: {cause}; nothing was marked done: rerun when it is back"


def is_silence(err: BaseException, auth: Any) -> bool:
    """Whether ``err`` says only that a node went quiet (a try timed out, the host is
    unreachable): its network may come back with the node's keys intact, so the call is worth
    repeating until the deadline. A refused or reset connection (the server died or restarted,
    and its keys with it), a TLS or credential failure and any error reply are final."""
    if auth_problem(err, auth) is not None or tls_failure(err) is not None:
        return False
    cause = transport_cause(err) or ""
    return cause.startswith(("timed out", "host unreachable"))


def is_cluster_down(err: BaseException) -> bool:
    """An error reply that says the cluster is down (a master is failing or failed)."""
    from redis.exceptions import ClusterDownError

    return any(
        isinstance(e, ClusterDownError)
        or "CLUSTERDOWN" in error_code(e)
        or "cluster is down" in str(e)
        for e in chain(err)
    )


def error_code(err: BaseException) -> str:
    """``OOM``, ``MOVED``, ... : redis-py strips the code into ``status_code``."""
    code = getattr(err, "status_code", None)
    return f"{code} {err}" if code else str(err)


def reply_line(
    err: BaseException, who: str, stage_prefix: str, find_dead: Any, timeout_s: float
) -> str | None:
    """The line for an error *reply* (the server answered, with an error) from ``who``, else
    None; for "the cluster is down", ``find_dead()`` names the node the others miss."""
    from redis.exceptions import ClusterDownError, ResponseError

    if not isinstance(err, (ResponseError, ClusterDownError)):
        return None
    text = error_code(err)
    code = text.split(" ", 1)[0]
    if is_cluster_down(err):
        dead = find_dead()
        if dead:
            cause = transport_cause(dead[1], min(2.0, timeout_s)) or one_line(dead[1])
            return (
                f"redis node {dead[0]} is down or unreachable: {cause} ({who} says the cluster "
                "is down); nothing was marked done: rerun when it is back"
            )
        return (
            f"{who}: the cluster is down ({one_line(err)}); nothing was marked done: rerun "
            "when it is healthy"
        )
    if code == "OOM" or "OOM command not allowed" in text:
        return (
            f"{who}: out of memory (maxmemory reached); raise maxmemory or add nodes "
            "(docs/scale.md: Redis sizing); nothing was marked done"
        )
    if code == "LOADING" or "loading the dataset" in text:
        return (
            f"{who}: the node restarted and is still loading its data; nothing was marked "
            "done: rerun when it has loaded"
        )
    if code in ("READONLY", "MASTERDOWN"):
        return (
            f"{who}: the node is a replica that cannot take writes ({one_line(err)}); give "
            "primaries in redis.nodes; nothing was marked done"
        )
    if code == "WRONGTYPE" or "WRONGTYPE" in text:
        return (
            f"{who}: a key under the stage's prefix '{stage_prefix}' holds another type (does "
            "another program write there? change redis.key_prefix); nothing was marked done"
        )
    if code == "BUSY":
        busy = f"{who}: busy running another script ({one_line(err)})"
        return f"{busy}; nothing was marked done: rerun"
    return (
        f"{who}: the server refused fuzzy_dedup's command ({one_line(err)}); nothing was "
        "marked done"
    )
