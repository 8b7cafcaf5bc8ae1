"""A canary tree beside a test's work_dir: files curator must never touch.

Reliability tests put one next to the work_dir (``canary_tree(tmp_path / "canary")``, or the
``canary`` fixture of tests/reliability/conftest.py, which every reliability test gets) and
check at the end that every file in it is still there with the same bytes, mode, inode and
mtime: a stage that deletes, rewrites or even re-creates something outside its work_dir and
declared outputs fails the test. The tree holds names that look like curator's own (shards,
markers, ``_outputs.json``), so a cleanup that matches by name would bite.

Imported as ``tests.canary`` (the repository root is on pytest's ``pythonpath``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

#: relative path -> content of the files a canary tree holds
FILES = {
    "notes.txt": b"the user's own notes\n",
    "out/src-00000.jsonl": b'{"id": "u1", "text": "a user file named like a shard"}\n',
    "out/read_jsonl-00000.jsonl.gz": b"not gzip, a user's file\n",
    "stages/x/_SUCCESS.json": b'{"state": "a user file named like a marker"}\n',
    "stages/x/_done/x-00000.json": b"{}\n",
    "stages/x/data/x-00000.jsonl.zst": b"\x28\xb5\x2f\xfd",
    "_outputs.json": b'{"outputs": {}}\n',
    "rejected/x/x-00000.jsonl.zst": b"",
    "deep/a/b/c/d.bin": bytes(range(256)),
}


def canary_tree(root: Path) -> Path:
    """Create the canary tree under ``root`` (a folder beside the work_dir); returns it."""
    for rel, data in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    (root / "link-to-notes").symlink_to("notes.txt")
    return root


def snapshot(root: Path) -> dict[str, tuple]:
    """Every entry under ``root``: (sha256, mode, inode, mtime_ns) of files, link targets,
    folders by name; a change of any of them is a touch."""
    out: dict[str, tuple] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            rel = os.path.relpath(p, root)
            st = os.lstat(p)
            if os.path.islink(p):
                out[rel] = ("link", os.readlink(p), st.st_ino)
            elif os.path.isdir(p):
                out[rel] = ("dir", st.st_mode, st.st_ino)
            else:
                with open(p, "rb") as f:
                    h = hashlib.sha256(f.read()).hexdigest()
                out[rel] = ("file", h, st.st_mode, st.st_ino, st.st_mtime_ns)
    return out


def assert_untouched(root: Path, before: dict[str, tuple]) -> None:
    """Fail naming what changed under the canary ``root`` since ``before``."""
    after = snapshot(root)
    if after != before:
        gone = sorted(set(before) - set(after))
        new = sorted(set(after) - set(before))
        changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
        raise AssertionError(f"canary tree {root} was touched: gone {gone}, new {new}, "
                             f"changed {changed}")
