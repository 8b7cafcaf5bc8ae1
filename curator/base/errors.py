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
