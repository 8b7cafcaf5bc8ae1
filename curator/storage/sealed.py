"""Results read back from a work_dir that must not run code: pickles sealed with an HMAC.

A global stage's phase results are arbitrary small Python objects (typed dataclasses, numpy
arrays), so they are pickled; but unpickling a file runs whatever it says, and a work_dir on a
shared filesystem may hold a file someone else planted. Each sealed file therefore carries an
HMAC-SHA256 of its bytes under a key only this user can read (``<work_dir>/.curator-key``, mode
0600, created on first use), and is unpickled only once the HMAC verifies. A key file that is
not ours or that others may read or write is replaced, which invalidates every sealed file
made with it (they are recomputed, never trusted).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import pickle
import secrets
import stat
from typing import Any

from curator.storage.atomic import atomic_open

KEY_NAME = ".curator-key"
MAGIC = b"CURATOR-SEALED-1\n"
_DIGEST = hashlib.sha256().digest_size


class Unsealed(Exception):
    """A sealed file that cannot be trusted; ``str()`` says why, in a few words."""


def work_dir_key(work_dir: str) -> bytes:
    """The HMAC key of ``work_dir``, created (0600) if missing or replaced if unsafe."""
    path = os.path.join(work_dir, KEY_NAME)
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            _create_key(path)
            continue
        except OSError:  # a symlink (ELOOP) or unreadable: not ours to trust
            _remove(path)
            continue
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            key = f.read(65)
        if (st.st_uid == os.geteuid() and stat.S_ISREG(st.st_mode)
                and not st.st_mode & 0o077 and len(key) == 32):
            return key
        _remove(path)
    raise OSError(f"{path}: cannot create a private key file")


def _create_key(path: str) -> None:
    """Write a new key under a temporary name, then link it into place: a process that finds
    the key file always finds it whole, and of two racing creators one wins."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp-{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        with contextlib.suppress(FileExistsError):  # another process made it first
            os.link(tmp, path)
    finally:
        _remove(tmp)


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _mac(key: bytes, label: str, body: bytes) -> bytes:
    return hmac.new(key, label.encode() + b"\0" + body, hashlib.sha256).digest()


def dump(path: str, obj: Any, key: bytes, label: str = "") -> None:
    """Write ``obj`` to ``path`` atomically, sealed under ``key``. ``label`` (the phase file's
    place in the work_dir) is part of the HMAC, so a sealed file copied elsewhere does not
    verify there."""
    body = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    with atomic_open(path, "wb") as f:
        f.write(MAGIC + _mac(key, label, body) + body)


def load(path: str, key: bytes, label: str = "") -> Any:
    """The object sealed in ``path``; :class:`Unsealed` if it is not a sealed file, was made
    with another key or for another place, or was changed since."""
    # the HMAC is checked over the file in chunks first: a planted or foreign file, however
    # large, is never held in memory, and only a verified body is read whole (to unpickle)
    mac = hmac.new(key, label.encode() + b"\0", hashlib.sha256)
    with open(path, "rb") as f:
        head = f.read(len(MAGIC) + _DIGEST)
        if not head.startswith(MAGIC) or len(head) < len(MAGIC) + _DIGEST:
            raise Unsealed("not a sealed curator file")
        tag = head[len(MAGIC):]
        for chunk in iter(lambda: f.read(1 << 20), b""):
            mac.update(chunk)
        if not hmac.compare_digest(tag, mac.digest()):
            raise Unsealed("its HMAC does not verify under this work_dir's key")
        f.seek(len(head))
        body = f.read()
    if not hmac.compare_digest(tag, _mac(key, label, body)):  # the file changed since the check
        raise Unsealed("it changed while it was being read")
    try:
        # verified above: written by this user's own run in this work_dir
        return pickle.loads(body)  # noqa: S301 - HMAC-verified under a 0600 work_dir key
    except Exception as e:  # a bug in an older curator's pickling, a class gone since
        raise Unsealed(f"it no longer unpickles ({type(e).__name__})") from None
