"""The many-hosts harness (tests/helpers_netns.py) the cluster tests stand on: hosts reach each
other by name over the bridge and only there, a pulled cable or a partition really cuts them
off, two harnesses never share names or addresses, and nothing is left behind, not even by a
killed test process."""

from __future__ import annotations

import ipaddress
import signal
import subprocess
import sys

import pytest

from tests import helpers_netns as nn

RANGE = ipaddress.ip_network("198.18.0.0/15")

SERVE = (
    "import socket,sys\n"
    "s=socket.create_server((sys.argv[1], 9000)); print('up', flush=True)\n"
    "while True:\n"
    "    c,_=s.accept(); c.sendall(b'hi'); c.close()\n"
)
# connect by host NAME; exit 0 when it answered, 3 when it timed out or failed
CONNECT = (
    "import socket,sys\n"
    "try:\n"
    "    c=socket.create_connection((sys.argv[1], 9000), timeout=float(sys.argv[2]))\n"
    "    sys.exit(0 if c.recv(2)==b'hi' else 4)\n"
    "except OSError:\n"
    "    sys.exit(3)\n"
)


@pytest.fixture(autouse=True)
def _need_netns() -> None:
    nn.require()


def _reach(net: nn.Hosts, a: str, b: str, timeout: float = 2.0) -> bool:
    return net.run(a, [sys.executable, "-c", CONNECT, b, str(timeout)], check=False).returncode == 0


def _serve(net: nn.Hosts, host: str) -> subprocess.Popen:
    p = net.popen(
        host, [sys.executable, "-c", SERVE, net.addr(host)], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout is not None and p.stdout.readline().strip() == "up"
    return p


def test_hosts_talk_by_name_and_links_can_be_cut():
    with nn.Hosts(["a", "b", "c"]) as net:
        addrs = [ipaddress.ip_address(net.addr(h)) for h in net.names]
        assert all(a in RANGE for a in addrs) and len(set(addrs)) == 3
        # loopback up, the host's own name, and one interface on the bridge
        assert net.run("a", ["hostname"]).stdout.strip() == "a"
        lo = net.run("a", ["ip", "-o", "addr", "show", "dev", "lo"]).stdout
        assert "127.0.0.1/8" in lo and "UP" in net.run("a", ["ip", "link", "show", "lo"]).stdout
        eth = net.run("a", ["ip", "-o", "-4", "addr", "show"]).stdout
        assert f"{net.addr('a')}/24" in eth and len(eth.splitlines()) == 2  # lo and eth0
        assert net.run(
            "b", [sys.executable, "-c", "import socket;print(socket.gethostbyname('c'))"]
        ).stdout.strip() == net.addr("c")
        servers = [_serve(net, "b"), _serve(net, "c")]
        try:
            assert _reach(net, "a", "b") and _reach(net, "a", "c")
            net.link_down("b")
            assert not _reach(net, "a", "b", 1.0)  # silence: the connect times out
            assert _reach(net, "a", "c")
            net.link_up("b")
            assert _reach(net, "a", "b", 5.0)
            net.partition(["a"], ["b", "c"])
            assert not _reach(net, "a", "b", 1.0) and not _reach(net, "a", "c", 1.0)
            assert _reach(net, "b", "c")
            net.heal()
            assert _reach(net, "a", "b", 5.0) and _reach(net, "a", "c", 5.0)
        finally:
            for s in servers:
                s.kill()
                s.wait()
        names = {net.ns(h) for h in net.names} | {net.bridge_ns}
        assert names <= set(nn._namespaces())
    assert not names & set(nn._namespaces())


def test_two_harnesses_never_share_names_or_subnets_and_clean_up_on_failure():
    with pytest.raises(RuntimeError, match="boom"), nn.Hosts(["x"]) as one, nn.Hosts(["x"]) as two:
        assert one.slot != two.slot and one.ns("x") != two.ns("x")
        assert one.addr("x") != two.addr("x")
        left = {one.ns("x"), two.ns("x"), one.bridge_ns, two.bridge_ns}
        # a process still running inside is killed with its namespace
        sleeper = one.popen("x", ["sleep", "300"])
        raise RuntimeError("boom")
    assert sleeper.wait(timeout=10) != 0
    assert not left & set(nn._namespaces())


def test_namespaces_of_a_killed_test_process_are_swept():
    """A test process SIGKILLed while it holds hosts leaves its namespaces; its slot lock dies
    with it, so the next sweep (or the next taker of the slot) removes them."""
    code = (
        "import sys, time\nfrom tests import helpers_netns as nn\n"
        "net = nn.Hosts(['k']).__enter__(); print(net.ns('k'), flush=True)\n"
        "time.sleep(300)\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        text=True,
        env={
            "PYTHONPATH": str(nn.Path(nn.__file__).parents[1]),
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        },
    )
    assert p.stdout is not None
    ns = p.stdout.readline().strip()
    assert ns in nn._namespaces()
    assert ns not in nn.sweep()  # its owner is alive: left alone
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert ns in nn.sweep()
    assert ns not in nn._namespaces()
