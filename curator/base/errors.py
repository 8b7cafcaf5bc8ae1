"""Errors that end a run with one clear line (the CLI prints ``str(err)`` and exits non-zero)."""

from __future__ import annotations

import errno
import os


class CuratorError(Exception):
    """Base class: the message is shown to the user as is, without a traceback."""

    exit_code = 1


class ConfigError(CuratorError):
    """The pipeline YAML or a stage's parameters are invalid (nothing has run yet)."""

    exit_code = 2


class InputError(CuratorError):
    """An input file, URL or model cannot be used at all (a bad *record* is quarantined instead)."""


class StageError(CuratorError):
    """A stage failed; the message names the stage and, where known, the shard."""


#: Filesystem errors the user must fix (space, quota, permissions, a read-only mount), with what
#: to do about each; any phase of any stage, and the CLI commands, report them as one line.
_FS_HINTS = {
    errno.ENOSPC: "free space and rerun (finished work is kept)",
    errno.EDQUOT: "free space or raise the quota and rerun (finished work is kept)",
    errno.EFBIG: "the file exceeds a size limit (ulimit -f or the filesystem's); rerun once "
                 "it is raised",
    errno.EACCES: "fix the permissions and rerun",
    errno.EPERM: "fix the permissions and rerun",
    errno.EROFS: "the filesystem is mounted read-only; write elsewhere or remount, then rerun",
    # a name built from a parameter or the data (an output folder, a source's name)
    errno.ENAMETOOLONG: "a file or folder name is longer than the filesystem allows (255 bytes "
                        "on most); choose a shorter one",
    # a symlink planted where curator keeps its own file (storage/nofollow.py)
    errno.ELOOP: "remove it and rerun: curator follows no symlink inside the work_dir or an "
                 "output folder",
}


def fs_error_line(err: BaseException) -> str | None:
    """``'<path>: <reason> [ENOSPC]; <what to do>'`` for an ``OSError`` the user must fix (disk
    full, quota, no permission, read-only filesystem), else None (a bug keeps its traceback)."""
    if not isinstance(err, OSError) or err.errno not in _FS_HINTS:
        return None
    code = errno.errorcode.get(err.errno, str(err.errno))
    where = err.filename if err.filename is not None else "(file not named by the OS)"
    if err.filename2 is not None:
        where = f"{where} -> {err.filename2}"
    reason = err.strerror or os.strerror(err.errno)
    return f"{where}: {reason} [{code}]; {_FS_HINTS[err.errno]}"


def install_hint(err: BaseException) -> str:
    """For a module that is not installed, the extra that brings it, read from curator's own
    package metadata (so it follows pyproject.toml): `` (pip install
    'curator-pipeline[filters]')``; empty when there is no such extra or no metadata."""
    if not isinstance(err, ModuleNotFoundError) or not err.name:
        return ""
    import re
    from importlib import metadata

    module = err.name.split(".")[0].lower()
    try:
        reqs = metadata.requires("curator-pipeline") or []
    except metadata.PackageNotFoundError:
        return ""
    extras: list[str] = []
    for req in reqs:
        m = re.match(r"\s*([A-Za-z0-9._-]+)(?:\[([^\]]*)\])?[^;]*;\s*extra\s*==\s*['\"](\w+)", req)
        if not m or m.group(3) in ("all", "test", "bench"):
            continue
        names = [m.group(1), *(m.group(2) or "").split(",")]
        names = [n.strip().lower().replace("-", "_").replace(".", "_") for n in names if n]
        if any(n == module or n.startswith(module + "_") or n == f"python_{module}"
               for n in names) and m.group(3) not in extras:
            extras.append(m.group(3))
    if not extras:
        return ""
    alt = f" (or [{'], ['.join(extras[1:])}])" if len(extras) > 1 else ""
    return f" (pip install 'curator-pipeline[{extras[0]}]'{alt})"
