"""Many hosts on one machine: Linux network namespaces joined by a bridge, for tests that run
a cluster across "hosts" and cut their links.

Each :class:`Hosts` takes a *slot*: a lock file held (``flock``) for as long as it lives, so
two tests, two pytest workers or two checkouts on this machine never get the same slot. The
slot fixes every name and address it uses: namespaces ``cnsK-<host>`` (and ``cnsK-br`` for the
bridge, which lives in a namespace of its own, so nothing is added to the machine's own
network), and the subnet ``198.18.0.0/15`` split into 512 ``/24``s (slot K < 256:
``198.18.K.0/24``, else ``198.19.(K-256).0/24``); host i is ``.(i+1)``. Nothing outside that
range is ever addressed.

Everything is removed when the context ends, also on an exception, and by a finalizer when the
process exits without leaving it; a process killed outright releases its slot lock, and the
next taker of the slot (or :func:`sweep`) removes what it left.

Inside each namespace loopback is up and ``/etc/hosts`` (bind-mounted by ``ip netns exec``
from ``/etc/netns/<ns>/hosts``) names every host of the set, so host names work as on a real
cluster.

Imported as ``tests.helpers_netns`` (the repository root is on pytest's ``pythonpath``)::

    with Hosts(["sched", "w1", "w2"]) as net:
        p = net.popen("sched", ["dask", "scheduler", "--host", net.addr("sched"), ...])
        net.link_down("w1")      # the cable is pulled: packets to and from w1 are lost
        net.link_up("w1")
        net.partition(["sched"], ["w1", "w2"])   # two halves that cannot reach each other
        net.heal()
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

#: every namespace this module makes starts with this (then the slot number)
PREFIX = "cns"
SLOTS = 512
LOCK_DIR = Path(os.environ.get("CURATOR_NETNS_LOCK_DIR", "/run/curator-netns"))
_HOST_NAME = re.compile(r"^[a-z][a-z0-9-]{0,9}$")


_ECHO = (
    "import socket,sys; s=socket.create_server((sys.argv[1], 7)); print('up', flush=True);"
    " c,_=s.accept(); c.sendall(c.recv(9))"
)
_PROBE = (
    "import socket,sys; c=socket.create_connection((sys.argv[1], 7), timeout=10);"
    " c.sendall(b'ping'); assert c.recv(9)==b'ping'"
)


class NetnsUnavailable(RuntimeError):
    """Namespaces cannot be built here (not root, no ``ip``, no bridge/veth support)."""


def subnet(slot: int) -> str:
    """The ``/24`` of ``slot``, inside 198.18.0.0/15 (the benchmarking range, RFC 2544)."""
    if not 0 <= slot < SLOTS:
        raise ValueError(f"slot {slot} out of range 0..{SLOTS - 1}")
    return f"198.{18 + slot // 256}.{slot % 256}"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and p.returncode != 0:
        raise NetnsUnavailable(f"ip {' '.join(args)}: {p.stderr.strip() or p.returncode}")
    return p


def _namespaces() -> list[str]:
    p = _ip("netns", "list", check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def _kill_inside(ns: str) -> None:
    """SIGKILL every process in namespace ``ns`` (only ever one of ours): a namespace with a
    process in it outlives ``ip netns del``."""
    p = _ip("netns", "pids", ns, check=False)
    for pid in p.stdout.split():
        with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
            os.kill(int(pid), signal.SIGKILL)


def _remove_slot(slot: int) -> None:
    """Delete every namespace and /etc/netns folder of ``slot`` (the caller holds its lock)."""
    mine = f"{PREFIX}{slot}-"
    for ns in _namespaces():
        if ns.startswith(mine):
            _kill_inside(ns)
            _ip("netns", "del", ns, check=False)
    etc = Path("/etc/netns")
    if etc.is_dir():
        for d in etc.glob(f"{mine}*"):
            shutil.rmtree(d, ignore_errors=True)


def _try_lock(slot: int) -> int | None:
    LOCK_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(LOCK_DIR / f"slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def sweep() -> list[str]:
    """Remove namespaces of this module whose owner is gone (its slot lock is free); returns
    the names removed. Slots held by a live process are left alone."""
    gone = []
    slots = {
        int(m.group(1))
        for ns in _namespaces()
        if (m := re.match(rf"^{PREFIX}(\d+)-", ns)) and int(m.group(1)) < SLOTS
    }
    for slot in sorted(slots):
        fd = _try_lock(slot)
        if fd is None:
            continue
        try:
            gone += [ns for ns in _namespaces() if ns.startswith(f"{PREFIX}{slot}-")]
            _remove_slot(slot)
        finally:
            os.close(fd)
    return gone


def check_available() -> None:
    """Raise :class:`NetnsUnavailable` with the reason when namespaces cannot be built."""
    if os.geteuid() != 0:
        raise NetnsUnavailable("network namespaces need root (CI runs as root)")
    if shutil.which("ip") is None:
        raise NetnsUnavailable("the 'ip' command (iproute2) is not installed")


def require() -> None:
    """In a test: skip when namespaces cannot be built here, but FAIL in CI (``CI`` set), where
    they must run."""
    from tests.helpers import unavailable

    try:
        check_available()
    except NetnsUnavailable as e:
        unavailable(f"network namespaces: {e}")


def _teardown(slot: int, fd: int) -> None:
    try:
        _remove_slot(slot)
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)


class Hosts:
    """``names`` as hosts, each a network namespace with one address on a shared bridge."""

    def __init__(self, names: Sequence[str]) -> None:
        if not names or len(set(names)) != len(names):
            raise ValueError(f"host names must be distinct and not empty: {names}")
        for n in names:
            if not _HOST_NAME.match(n) or n == "br":
                raise ValueError(
                    f"host name {n!r}: lower-case letters, digits and '-', "
                    "at most 10 characters, not 'br'"
                )
        if len(names) > 250:
            raise ValueError("at most 250 hosts")
        self.names = list(names)
        self.slot = -1
        self._fd: int | None = None
        self._finalizer: Any = None
        self._cut: set[str] = set()

    # --- names and addresses -------------------------------------------------------------
    def ns(self, host: str) -> str:
        """The namespace name of ``host``."""
        self._known(host)
        return f"{PREFIX}{self.slot}-{host}"

    def addr(self, host: str) -> str:
        """The IPv4 address of ``host`` (198.18.0.0/15)."""
        self._known(host)
        return f"{subnet(self.slot)}.{self.names.index(host) + 1}"

    @property
    def bridge_ns(self) -> str:
        return f"{PREFIX}{self.slot}-br"

    def _known(self, host: str) -> None:
        if host not in self.names:
            raise KeyError(f"no host {host!r} in {self.names}")

    # --- building and removing -----------------------------------------------------------
    def __enter__(self) -> Hosts:
        check_available()
        for slot in range(SLOTS):
            fd = _try_lock(slot)
            if fd is not None:
                break
        else:
            raise NetnsUnavailable(f"all {SLOTS} namespace slots are in use")
        self.slot, self._fd = slot, fd
        self._finalizer = weakref.finalize(self, _teardown, slot, fd)
        try:
            _remove_slot(slot)  # what a killed holder of this slot left
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Kill every process in the hosts and remove the namespaces (idempotent)."""
        if self._finalizer is not None:
            self._finalizer()

    def _build(self) -> None:
        br = self.bridge_ns
        _ip("netns", "add", br)
        _ip("-n", br, "link", "set", "lo", "up")
        _ip("-n", br, "link", "add", "br0", "type", "bridge")
        _ip("-n", br, "link", "set", "br0", "up")
        hosts_file = "127.0.0.1 localhost\n::1 localhost\n" + "".join(
            f"{self.addr(h)} {h}\n" for h in self.names
        )
        for h in self.names:
            ns = self.ns(h)
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip(
                "-n",
                br,
                "link",
                "add",
                f"p-{h}",
                "type",
                "veth",
                "peer",
                "name",
                "eth0",
                "netns",
                ns,
            )
            _ip("-n", br, "link", "set", f"p-{h}", "master", "br0")
            _ip("-n", br, "link", "set", f"p-{h}", "up")
            _ip("-n", ns, "addr", "add", f"{self.addr(h)}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            etc = Path("/etc/netns") / ns
            etc.mkdir(parents=True, exist_ok=True)
            (etc / "hosts").write_text(hosts_file)
            (etc / "hostname").write_text(h + "\n")
        self._check_bridge()

    def _check_bridge(self) -> None:
        """A TCP connection from the first host to the last proves the bridge forwards."""
        if len(self.names) < 2:
            return
        import sys

        a, b = self.names[0], self.names[-1]
        srv = self.popen(
            b, [sys.executable, "-c", _ECHO, self.addr(b)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert srv.stdout is not None
            srv.stdout.readline()  # listening
            p = self.run(a, [sys.executable, "-c", _PROBE, self.addr(b)], check=False, timeout=30)
            if p.returncode != 0:
                raise NetnsUnavailable(
                    f"host {a} cannot reach {b} ({self.addr(b)}) over the "
                    f"bridge: {p.stderr.strip()[-300:]}"
                )
        finally:
            srv.kill()
            srv.wait()

    # --- running commands ----------------------------------------------------------------
    def prefix(self, host: str) -> list[str]:
        """The argv prefix that runs a command on ``host``: ``ip netns exec <ns>``, in a UTS
        namespace of its own whose host name is ``host`` (what ``socket.gethostname()`` says
        there, as on a real node)."""
        return [
            "ip",
            "netns",
            "exec",
            self.ns(host),
            "unshare",
            "--uts",
            "--",
            "sh",
            "-c",
            'hostname "$0" && exec "$@"',
            host,
        ]

    def popen(self, host: str, argv: Sequence[str], **kw: Any) -> subprocess.Popen:
        """Start ``argv`` on ``host`` (``subprocess.Popen`` keywords pass through)."""
        return subprocess.Popen([*self.prefix(host), *argv], **kw)

    def run(
        self, host: str, argv: Sequence[str], check: bool = True, timeout: float = 600, **kw: Any
    ) -> subprocess.CompletedProcess:
        """Run ``argv`` on ``host`` to the end, output captured as text."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        return subprocess.run([*self.prefix(host), *argv], check=check, timeout=timeout, **kw)

    def ssh_stand_in(self, path: Path) -> Path:
        """Write an executable at ``path`` that takes ssh's place for a launcher (MPI Hydra's
        ``-launcher ssh -launcher-exec PATH``): ``PATH [-x ...] HOST COMMAND...`` runs the
        command line on ``HOST`` (one of these hosts) as ssh would, through ``sh -c``."""
        path.write_text(
            "#!/bin/sh\n"
            "# ssh's options (-x) first, then the host, then the command line\n"
            'while [ "${1#-}" != "$1" ]; do shift; done\n'
            'host=$1; shift\n'
            f'exec ip netns exec "{PREFIX}{self.slot}-$host" unshare --uts -- '
            """sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"\n"""
        )
        path.chmod(0o755)
        return path

    # --- faults --------------------------------------------------------------------------
    def link_down(self, host: str) -> None:
        """Pull ``host``'s cable: its bridge port goes down, so every packet to or from it is
        lost while the host keeps its address and routes (its processes see silence, not an
        error), as when a switch port or a node's NIC fails."""
        self._known(host)
        _ip("-n", self.bridge_ns, "link", "set", f"p-{host}", "down")
        self._cut.add(host)

    def link_up(self, host: str) -> None:
        """Plug ``host``'s cable back in."""
        _ip("-n", self.bridge_ns, "link", "set", f"p-{host}", "up")
        self._cut.discard(host)

    def partition(self, *groups: Sequence[str]) -> None:
        """Split the hosts into ``groups`` that reach each other only inside a group (each
        group on a bridge of its own); hosts in no group keep the first bridge."""
        br = self.bridge_ns
        for k, group in enumerate(groups, start=1):
            if _ip("-n", br, "link", "show", f"br{k}", check=False).returncode != 0:
                _ip("-n", br, "link", "add", f"br{k}", "type", "bridge")
                _ip("-n", br, "link", "set", f"br{k}", "up")
            for h in group:
                self._known(h)
                _ip("-n", br, "link", "set", f"p-{h}", "master", f"br{k}")

    def heal(self) -> None:
        """Undo :meth:`partition` and :meth:`link_down`: every host back on one bridge."""
        for h in self.names:
            _ip("-n", self.bridge_ns, "link", "set", f"p-{h}", "master", "br0")
            if h in self._cut:
                self.link_up(h)


@contextlib.contextmanager
def hosts(names: Sequence[str]) -> Iterator[Hosts]:
    """``with hosts([...]) as net:`` -- the same as ``with Hosts([...]) as net:``."""
    with Hosts(names) as net:
        yield net
