"""Security habits: ruff's flake8-bandit rules (``S``) are part of the project's lint, the
package is clean under them, and every finding kept is kept with a reason at its line."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

from tests.helpers import BIN, ROOT


def test_ruff_security_rules_are_on_and_the_package_is_clean():
    conf = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "S" in conf["select"]
    p = subprocess.run([str(BIN / "ruff"), "check", "--no-cache", "--select", "S",
                        "--output-format", "concise", "curator"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def test_every_kept_security_finding_says_why():
    bare = []
    for f in sorted((ROOT / "curator").rglob("*.py")):
        for n, line in enumerate(f.read_text().splitlines(), 1):
            m = re.search(r"#\s*noqa:\s*(S\d{3}(?:\s*,\s*[A-Z]+\d+)*)(.*)$", line)
            if m and len(m.group(2).strip(" -:")) < 8:
                bare.append(f"{Path(f).relative_to(ROOT)}:{n}: {line.strip()}")
    assert not bare, "noqa without a reason:\n" + "\n".join(bare)
