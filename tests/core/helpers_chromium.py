"""Headless Chromium, as the report tests drive it: a report page is checked as a browser lays
it out, not as its HTML reads."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def chromium(args: list[str], tmp: Path) -> subprocess.CompletedProcess:
    """Run Chromium with ``args`` and a profile under ``tmp``; a non-zero exit fails the test."""
    return subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={tmp / 'chrome-profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
