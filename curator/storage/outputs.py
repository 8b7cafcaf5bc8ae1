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

import orjson

from curator.core.errors import ConfigError
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


REGISTRY = "_outputs.json"


def owner_of(path: str, work_dir: str | None = None) -> str | None:
    """The stage that claimed folder ``path`` (its marker file, or the work_dir's registry)."""
    try:
        with open(os.path.join(path, MARKER), "rb") as f:
            return str(orjson.loads(f.read()).get("stage"))
    except (OSError, orjson.JSONDecodeError, AttributeError):
        pass
    return _registry(work_dir).get(path) if work_dir else None


def _registry(work_dir: str) -> dict[str, str]:
    try:
        with open(os.path.join(work_dir, REGISTRY), "rb") as f:
            reg = orjson.loads(f.read())
        return reg if isinstance(reg, dict) else {}
    except (OSError, orjson.JSONDecodeError):
        return {}


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
    os.makedirs(path, exist_ok=True)
    marker = os.path.join(path, MARKER)
    if owner_of(path) != owner:
        with open(marker, "wb") as f:
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
    os.makedirs(full, exist_ok=True)
    if not work_dir:
        mark_output_dir(full, owner)
        return full
    reg = _registry(work_dir)
    key = os.path.realpath(full)
    if reg.get(key) != owner:
        reg[key] = owner
        with atomic_open(os.path.join(work_dir, REGISTRY), "wb") as f:
            f.write(orjson.dumps(reg, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    return full
