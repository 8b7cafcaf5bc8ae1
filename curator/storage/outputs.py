"""Output folders: curator never writes into (let alone clears) a folder it did not create.

A stage or command that writes a folder claims it first with :func:`claim_output_dir`. The
claim is refused with a one-line error when the folder is the current folder, the work_dir,
home, ``/`` or a parent of any of them, or when it exists, is not empty and carries no mark of
the same stage. The mark is kept out of the folder for pipeline stages (a folder of documents
should hold documents only): ``<work_dir>/_outputs.json`` lists the folders the work_dir's
stages claimed. Commands without a work_dir (``curator export-triton``) put a marker file
(``.curator-output.json``) into the folder they replace as a whole.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

from curator.base.errors import ConfigError
from curator.storage import nofollow
from curator.storage.atomic import atomic_open

MARKER = ".curator-output.json"


def _protected(work_dir: str | None, replaces: bool) -> dict[str, str]:
    """Folders no output may be, with why. A parent of the work_dir is allowed to a writer
    that only adds files (``curator tokenize -o out`` keeps its work_dir in ``out/_work``),
    never to one that replaces the folder as a whole."""
    out: dict[str, str] = {}
    for what, p, parents in (("the current folder", os.getcwd(), True),
                             ("the work_dir", work_dir, replaces),
                             ("your home folder", os.path.expanduser("~"), True)):
        if not p:
            continue
        p = os.path.realpath(p)
        out.setdefault(p, what)
        parent = os.path.dirname(p)
        while parents and parent and parent not in out:
            out[parent] = f"a parent of {what}"
            if parent == os.path.dirname(parent):
                break
            parent = os.path.dirname(parent)
    return out


def protected_reason(path: str, work_dir: str | None, replaces: bool = False) -> str | None:
    """Why ``path`` may never be an output folder (``"the work_dir"``, ``"a parent of the
    current folder"``...), or ``None``."""
    if "://" in path and not path.startswith("file://"):
        return None
    return _protected(work_dir, replaces).get(os.path.realpath(path.removeprefix("file://")))


REGISTRY = "_outputs.json"


def owner_of(path: str, work_dir: str | None = None) -> str | None:
    """The stage that claimed folder ``path`` (its marker file, or the work_dir's registry)."""
    try:
        with open(os.path.join(path, MARKER), "rb") as f:
            return str(orjson.loads(f.read()).get("stage"))
    except (OSError, orjson.JSONDecodeError, AttributeError):
        pass
    return _registry(work_dir).get(os.path.realpath(path)) if work_dir else None


def _registry(work_dir: str) -> dict[str, str]:
    """``realpath -> owner`` of the folders this work_dir's stages claimed. The registry
    records where the work_dir was (``work_dir``); in a copied or moved work_dir its claims
    inside the work_dir follow it (rebased), and its claims outside it are kept only when the
    work_dir was moved, never when it was copied (the original still owns those folders)."""
    try:
        with open(os.path.join(work_dir, REGISTRY), "rb") as f:
            reg = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(reg, dict):
        return {}
    here = os.path.realpath(work_dir)
    if not isinstance(reg.get("outputs"), dict):  # the format before the origin was kept
        return {k: v for k, v in reg.items() if isinstance(v, str)
                and not _in_other_work_dir(k, here)}
    outputs = {k: v for k, v in reg["outputs"].items() if isinstance(v, str)}
    origin = reg.get("work_dir")
    if not isinstance(origin, str) or origin == here:
        return outputs
    copied = _is_work_dir(origin)
    out: dict[str, str] = {}
    for path, owner in outputs.items():
        if _inside(path, origin):
            out[here + path[len(origin):]] = owner
        elif not copied and not _in_other_work_dir(path, here):
            out[path] = owner
    return out


def _in_other_work_dir(path: str, here: str) -> bool:
    """``path`` lies inside a curator work_dir other than ``here`` (a claim copied along with
    a work_dir: the folder is that work_dir's, never this one's)."""
    if "://" in path or _inside(path, here):
        return False
    parent = os.path.dirname(path)
    while parent and parent != os.path.dirname(parent):
        if parent != here and _is_work_dir(parent):
            return True
        parent = os.path.dirname(parent)
    return False


def claimed(work_dir: str) -> dict[str, str]:
    """``realpath -> owner`` of the output folders this work_dir's stages claimed (rebased
    or dropped for a copied or moved work_dir)."""
    return _registry(work_dir)


def _is_work_dir(path: str) -> bool:
    """``path`` is still a curator work_dir (a copy's original, as opposed to a move)."""
    return os.path.exists(os.path.join(path, REGISTRY)) or (os.path.isdir(
        os.path.join(path, "stages")) and os.path.exists(os.path.join(path, "report.json")))


def _inside(path: str, folder: str) -> bool:
    folder = folder.rstrip(os.sep) or os.sep
    return path == folder or path.startswith(folder + os.sep) or folder == os.sep


def rebase(obj: Any, old: str, new: str) -> Any:
    """``obj`` (a JSON value read from a marker) with every path under ``old`` moved under
    ``new``: the records of a copied or moved work_dir then name its own files."""
    if isinstance(obj, str):
        return new + obj[len(old):] if _inside(obj, old) and old != os.sep else obj
    if isinstance(obj, list):
        return [rebase(x, old, new) for x in obj]
    if isinstance(obj, dict):
        return {rebase(k, old, new): rebase(v, old, new) for k, v in obj.items()}
    return obj


def trusted(path: str, work_dir: str, claims: list[str] | None = None) -> bool:
    """May curator delete (or reuse) file ``path`` for this work_dir? Only when it lies inside
    the work_dir or inside an output folder this work_dir's stages claimed (remote URLs: when
    they lie under a claimed URL prefix). Anything else (a file of the work_dir this one was
    copied from, a user's file) is never touched. ``claims``: the registry's folders, when
    the caller checks many paths."""
    roots = list(claimed(work_dir)) if claims is None else claims
    if "://" in path and not path.startswith("file://"):
        return any(_inside(path, k) for k in roots if "://" in k)
    real = os.path.realpath(path.removeprefix("file://"))
    if _inside(real, os.path.realpath(work_dir)):
        return True
    return any(_inside(real, k) for k in roots if "://" not in k)


def _file_id(path: str) -> list[int] | None:
    try:
        st = os.stat(path.removeprefix("file://"))
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def file_ids(paths: list[str]) -> dict[str, list[int]]:
    """``path -> [size, mtime_ns]`` of the local files among ``paths``, recorded beside them in
    a marker: a later run reuses a file only while it is still the one written."""
    out: dict[str, list[int]] = {}
    for p in paths:
        if "://" not in p or p.startswith("file://"):
            got = _file_id(p)
            if got is not None:
                out[p] = got
    return out


def missing_or_foreign(paths: list[str], work_dir: str, ids: Any = None) -> list[str]:
    """The ``paths`` (output files a marker lists) that are gone, lie outside what this
    work_dir owns (:func:`trusted`), or are no longer the file written there (size or mtime
    differ from ``ids``, :func:`file_ids`; markers written before it have none): a result that
    names them is not valid any more."""
    out: list[str] = []
    claims: list[str] | None = None
    ids = ids if isinstance(ids, dict) else {}
    for p in paths:
        if "://" in p and not p.startswith("file://"):
            continue  # remote outputs are not checked (a HEAD per file per rerun)
        got = _file_id(p)
        # a file replaced since (another machine's folder at the same path after a move, an
        # edit) is not this run's output, whatever its name
        if got is None or (isinstance(ids.get(p), list) and ids[p] != got):
            out.append(p)
            continue
        if claims is None:
            claims = list(claimed(work_dir))
        if not trusted(p, work_dir, claims):
            out.append(p)
    return out


def check_output_dir(path: str, owner: str, *, work_dir: str | None = None,
                     replaces: bool = False) -> str:
    """Raise :class:`ConfigError` unless ``owner`` may write folder ``path`` (``replaces``:
    replace it as a whole); returns its absolute path. Remote URLs are not checked."""
    if "://" in path and not path.startswith("file://"):
        return path
    given = os.path.abspath(path.removeprefix("file://"))
    full = os.path.realpath(given)
    what = _protected(work_dir, replaces).get(full)
    if what:
        raise ConfigError(f"{owner}: refusing to write the output folder '{path}': it is {what};"
                          " give the output a folder of its own")
    if os.path.lexists(full) and not os.path.isdir(full):
        raise ConfigError(f"{owner}: output folder '{path}' exists and is not a folder")
    if os.path.isdir(full):
        try:
            entries = [e for e in os.listdir(full) if e != MARKER]
            if work_dir and not replaces:  # the work_dir inside the output is not a user file
                inner = os.path.realpath(work_dir)
                entries = [e for e in entries if not (
                    inner == os.path.join(full, e) or inner.startswith(os.path.join(full, e)
                                                                       + os.sep))]
        except OSError as e:
            raise ConfigError(f"{owner}: cannot read output folder '{path}': {e.strerror}"
                              ) from None
        found = owner_of(full, work_dir)
        if entries and found != owner:
            whose = f"it was written by '{found}'" if found else (
                f"it holds {len(entries)} file(s) curator did not write there")
            raise ConfigError(f"{owner}: refusing to write into output folder '{path}': {whose}"
                              "; empty it, remove it or choose another folder")
    return given


def mark_output_dir(path: str, owner: str) -> None:
    """Put ``owner``'s marker into folder ``path`` (created if missing)."""
    nofollow.confine(path)
    nofollow.makedirs(path)
    marker = os.path.join(path, MARKER)
    if owner_of(path) != owner:
        with atomic_open(marker, "wb") as f:
            f.write(orjson.dumps({"stage": owner, "note": "written by curator; a rerun of the "
                                  "same stage may replace this folder's content"}) + b"\n")


def claim_output_dir(path: str, owner: str, *, work_dir: str | None = None,
                     replaces: bool = False) -> str:
    """:func:`check_output_dir`, then create the folder and record the claim: in the work_dir's
    registry when there is a work_dir, else with a marker file in the folder. Returns the
    absolute path."""
    full = check_output_dir(path, owner, work_dir=work_dir, replaces=replaces)
    if "://" in full:
        return full
    nofollow.confine(full)
    nofollow.makedirs(full)
    if not work_dir:
        mark_output_dir(full, owner)
        return full
    reg = _registry(work_dir)
    key = os.path.realpath(full)
    here = os.path.realpath(work_dir)
    if reg.get(key) != owner or _origin(work_dir) != here:
        reg[key] = owner
        write_registry(work_dir, reg)
    return full


def _origin(work_dir: str) -> str | None:
    """Where the work_dir was when its registry was last written."""
    try:
        with open(os.path.join(work_dir, REGISTRY), "rb") as f:
            reg = orjson.loads(f.read())
    except (OSError, orjson.JSONDecodeError):
        return None
    return reg.get("work_dir") if isinstance(reg, dict) else None


def write_registry(work_dir: str, reg: dict[str, str]) -> None:
    """Write the claims ``reg`` with the work_dir's current location."""
    with atomic_open(os.path.join(work_dir, REGISTRY), "wb") as f:
        f.write(orjson.dumps({"work_dir": os.path.realpath(work_dir), "outputs": reg},
                             option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))


def adopt(work_dir: str) -> str | None:
    """Record the work_dir's current location in its registry; returns the earlier location
    when the work_dir was copied or moved since (its claims rebased or dropped on the way,
    see :func:`_registry`), else ``None`` (also for a new work_dir, or one whose registry
    predates the recorded location)."""
    origin, here = _origin(work_dir), os.path.realpath(work_dir)
    if origin == here:
        return None
    write_registry(work_dir, _registry(work_dir))
    return origin
