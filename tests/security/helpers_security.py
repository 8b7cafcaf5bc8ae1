"""A real second account for the tests that act as another user on the same host."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess

import pytest

from tests.helpers import unavailable

OTHER = "curator-other"


def other_user() -> tuple[int, int]:
    """uid and gid of a real account other than the test's (created when missing)."""
    if os.geteuid() != 0:
        unavailable("root, to act as another user")
    if shutil.which("setpriv") is None:
        pytest.fail("setpriv (util-linux) is missing: scripts/setup.sh installs it")
    try:
        pw = pwd.getpwnam(OTHER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", OTHER], capture_output=True)
        pw = pwd.getpwnam(OTHER)  # made here, or by a test running beside this one
    assert pw.pw_uid != os.geteuid()
    return pw.pw_uid, pw.pw_gid
