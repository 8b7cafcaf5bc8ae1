"""Files curator creates, opened without following symlinks below a trusted root.

A work_dir (or an output folder) may be writable by others: a symlink planted where curator
keeps its own file (``.lock``, a marker, ``stages/<id>/data``) would make the owner's run
write, truncate or delete the file it points to. Every file and folder curator creates or
removes is therefore reached from a *root* (the work_dir, a declared output folder: the path
as the user gave it, symlinks in it followed) one component at a time, each opened relative
to its parent's descriptor with ``O_NOFOLLOW``; new files are created with ``O_EXCL``. A
symlink met on the way is an ``OSError`` (``ELOOP``) naming the path, which every command
reports as one line. Roots are registered per process with :func:`confine` (the runner, each
shard task and each phase task register their work_dir; a stage's declared output folder is
registered where it is resolved). A path under no root has its folder opened as given (a
path the user named) and only its last component protected.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator
from typing import IO, Any

_ROOTS: set[str] = set()
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW_DIR = _DIR | os.O_NOFOLLOW
SYMLINK = "is a symlink where curator keeps its own file"


def confine(root: str) -> None:
    """Treat ``root`` (a work_dir, an output folder) as a root: everything below it is reached
    without following symlinks."""
    if "://" in root and not root.startswith("file://"):
        return
    _ROOTS.add(os.path.abspath(root.removeprefix("file://")))


def root_of(path: str) -> str | None:
    """The outermost registered root holding ``path`` (absolute), or ``None``."""
    best = None
    for r in _ROOTS:
        if (path == r or path.startswith(r.rstrip(os.sep) + os.sep)) and (
                best is None or len(r) < len(best)):
            best = r
    return best


def symlink_error(path: str) -> OSError:
    return OSError(errno.ELOOP, SYMLINK, path)


def _open_below(fd: int, parts: list[str], base: str, create: bool) -> int:
    """Descend from directory ``fd`` (which this call closes) through ``parts``."""
    here = base
    try:
        for part in parts:
            here = os.path.join(here, part)
            try:
                nfd = os.open(part, _NOFOLLOW_DIR, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT),
                                            here) from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o777, dir_fd=fd)
                nfd = os.open(part, _NOFOLLOW_DIR, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
                    raise symlink_error(here) from None
                raise OSError(e.errno, e.strerror, here) from None
            os.close(fd)
            fd = nfd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_dir(path: str, create: bool = False) -> int:
    """A descriptor of folder ``path`` (created with its parents when ``create``); below a
    root no component is a symlink. The caller closes it."""
    full = os.path.abspath(path.removeprefix("file://"))
    root = root_of(full)
    if root is None:
        if create:
            os.makedirs(full, exist_ok=True)
        return os.open(full, _DIR)
    if create:
        os.makedirs(root, exist_ok=True)
    rel = os.path.relpath(full, root)
    parts = [] if rel == "." else rel.split(os.sep)
    return _open_below(os.open(root, _DIR), parts, root, create)


def makedirs(path: str) -> None:
    """``os.makedirs(path, exist_ok=True)`` that follows no symlink below a root."""
    os.close(open_dir(path, create=True))


@contextlib.contextmanager
def parent(path: str, create: bool = True) -> Iterator[tuple[int, str]]:
    """``(descriptor of the folder holding path, file name)``."""
    full = os.path.abspath(path.removeprefix("file://"))
    d, name = os.path.split(full)
    fd = open_dir(d, create=create)
    try:
        yield fd, name
    finally:
        os.close(fd)


def check_not_link(fd: int, name: str, path: str) -> None:
    """Raise the symlink error when ``name`` in folder ``fd`` is a symlink."""
    if _is_link(fd, name):
        raise symlink_error(path)


def open_fd(fd: int, name: str, flags: int, path: str, mode: int = 0o666) -> int:
    """``os.open(name, flags | O_NOFOLLOW, dir_fd=fd)``; a symlink there is the one-line
    error naming ``path``."""
    try:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=fd)
    except OSError as e:
        if e.errno == errno.ELOOP or (e.errno == errno.EEXIST and _is_link(fd, name)):
            raise symlink_error(path) from None
        raise OSError(e.errno, e.strerror, path) from None


def open_file(path: str, mode: str = "wb", perm: int = 0o666,
              exclusive: bool = False) -> IO[Any]:
    """Open ``path`` for writing (``w``: truncate, ``a``: append; ``exclusive``: it must not
    exist) without following a symlink anywhere below its root."""
    flags = os.O_WRONLY | os.O_CREAT
    flags |= os.O_APPEND if "a" in mode else (0 if exclusive else os.O_TRUNC)
    if "+" in mode:
        flags = (flags & ~os.O_WRONLY) | os.O_RDWR
    if exclusive:
        flags |= os.O_EXCL
    with parent(path) as (dfd, name):
        fd = open_fd(dfd, name, flags, path, perm)
    return os.fdopen(fd, mode)


def replace(src: str, dst: str) -> None:
    """``os.replace`` within one folder; refuses a symlink standing at ``dst``."""
    with parent(dst) as (dfd, name):
        check_not_link(dfd, name, dst)
        os.replace(os.path.basename(src), name, src_dir_fd=dfd, dst_dir_fd=dfd)


def unlink(path: str, missing_ok: bool = True) -> None:
    """Remove file ``path`` (a symlink there is removed, never followed); a symlinked folder
    on the way is the symlink error."""
    try:
        with parent(path, create=False) as (dfd, name):
            os.unlink(name, dir_fd=dfd)
    except FileNotFoundError:
        if not missing_ok:
            raise


def rmtree(path: str) -> None:
    """Remove folder ``path`` and its content; a symlink at ``path`` or inside it is removed
    as a link, never followed (``shutil.rmtree`` relative to the parent's descriptor)."""
    try:
        with parent(path, create=False) as (dfd, name):
            if _is_link(dfd, name):
                os.unlink(name, dir_fd=dfd)
                return
            shutil.rmtree(name, dir_fd=dfd)
    except FileNotFoundError:
        pass


def exists(path: str) -> bool:
    """Whether ``path`` exists, reached without following symlinks below its root."""
    try:
        with parent(path, create=False) as (dfd, name):
            os.stat(name, dir_fd=dfd, follow_symlinks=False)
            return True
    except OSError:
        return False
