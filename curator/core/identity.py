"""What a result depends on, so that a rerun redoes exactly what changed.

Three things decide whether a finished shard is still valid:

* the stage's **configuration**: its YAML name, its code (a digest of its module and of the
  curator modules of stage logic it imports, see :mod:`curator.core.codehash`; for a custom
  stage also the source of the modules defining it; plus the manual ``version`` salt), its
  parameters and its upstream stages' configuration; the package version and where the code
  is installed are *not* part of it, so an upgrade that leaves a stage's code alone reruns
  nothing of it;
* the **identity of what it read**: for a source shard the files behind it (local: size,
  ``mtime_ns``, ``ctime_ns`` and inode, plus a content hash with ``identity: content``;
  remote: ETag / Last-Modified / size as the filesystem reports them)
  plus the shard's own data (URL, checksum, resolved ``latest`` date); for any other shard the
  key of the upstream shard it was computed from;
* for stages below a global stage, that global stage's state (its artifacts, e.g. a tokenizer,
  depend on the whole dataset).
"""

from __future__ import annotations

import hashlib
import inspect
import os
import stat
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from curator.base.errors import CuratorError
from curator.core.codehash import (
    code_digests,
    followed,
    is_user_module,
    own_reads,
    runtime_imports,
    source_imports,
    variable_names,
)
from curator.core.codeobj import values_digest
from curator.storage import sealed

#: Bump when the way keys are computed changes (every earlier result then reruns once).
KEY_FORMAT = 4


def fingerprint_key(work_dir: str, create: bool = False) -> bytes | None:
    """The work_dir's own random key (:func:`curator.storage.sealed.work_dir_key`, mode 0600,
    also what seals phase results), which keys the digests of secret parameters
    (:func:`~curator.base.redact.keyed_digest`); ``None`` when the work_dir has none yet
    (``create``: make it). Read without following a symlink; one that is not the user's
    private file counts as none."""
    if create:
        try:
            return sealed.work_dir_key(work_dir)
        except OSError as e:
            raise CuratorError(f"work_dir '{work_dir}': cannot make its key file: "
                               f"{e.strerror or e}") from None
    try:
        fd = os.open(os.path.join(work_dir, sealed.KEY_NAME), os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        key = f.read(65)
    ok = (st.st_uid == os.geteuid() and stat.S_ISREG(st.st_mode) and not st.st_mode & 0o077
          and len(key) == 32)
    return key if ok else None


def digest(obj: Any) -> str:
    """A short, stable hash of a JSON-able value (dict keys sorted)."""
    blob = orjson.dumps(obj, option=orjson.OPT_SORT_KEYS, default=str)
    return hashlib.sha256(blob).hexdigest()[:16]


# -- identity of the code ---------------------------------------------------------------------


def code_identity(cls: type, builtin: bool, extra_modules: Iterable[str] = (),
                  variables: set[str] | None = None) -> dict[str, Any]:
    """What a stage's results depend on in code.

    ``modules``: a digest of each curator module of stage logic that the stage's class (and its
    curator base classes) import, transitively, plus its declared ``code_deps``
    (:func:`curator.core.codehash.code_digests`), keyed by path inside the package
    (``curator/filters/rules.py``), so ``curator status`` can name the one that changed.
    ``version``: the class attribute, a manual salt on top. A built-in stage (``builtin``:
    registered under its YAML name, see :func:`curator.core.registry.is_builtin`) has nothing
    more. A custom stage (dotted path, ``@filter``...) also has ``source``: a hash of the source
    of every module outside curator that defines a class in its MRO (or its function), and of
    ``extra_modules`` (the module its YAML entry names, which may only call a factory); the
    user's own modules those import, directly or not, are in ``modules`` with the curator ones.
    And ``code``: a digest of each of its own functions' code objects and of the values they
    use (closure cells, defaults, globals: :mod:`curator.core.codeobj`), so a factory's
    argument, a notebook's global or a function without any source file counts too.
    ``variables`` (a custom stage's) receives the environment variables its code names
    (:func:`curator.core.codehash.variable_names`): the caller keys their values."""
    version = int(getattr(cls, "version", 1))
    deps = tuple(getattr(cls, "code_deps", ()) or ())
    mro = [c.__module__ for c in cls.__mro__ if followed(c.__module__)]
    own = [c for c in cls.__mro__ if not c.__module__.startswith("curator.")
           and c.__module__ not in ("builtins", "curator")]
    bases = _dep_bases(own[0].__module__ if own else cls.__module__)
    if builtin:
        return {"version": version, "modules": code_digests(mro, deps, bases)}
    sources: dict[str, str] = {}
    texts: list[str] = []
    uses: list[str] = []
    objs: list[Any] = list(own)
    fn = cls.__dict__.get("function")
    if fn is not None:
        objs.append(getattr(fn, "__func__", fn))
    names = [(o.__module__, o) for o in objs] + [(m, None) for m in extra_modules]
    for modname, obj in names:
        mod = sys.modules.get(modname)
        key = modname
        try:
            text = inspect.getsource(mod) if mod is not None else inspect.getsource(obj)
        except (OSError, TypeError):
            if obj is None:
                continue
            try:
                text = inspect.getsource(obj)
                key = f"{modname}:{obj.__qualname__}"
            except (OSError, TypeError):  # no source: known by its code objects ("code")
                continue
        if not text or key in sources:
            continue
        sources[key] = hashlib.sha256(text.encode()).hexdigest()[:16]
        texts.append(text)
        uses += source_imports(text, modname,
                               os.path.basename(getattr(mod, "__file__", "") or "")
                               == "__init__.py")
        uses += runtime_imports(modname)  # by a computed name, as it was imported
    code: dict[str, str] = {}
    for c in own:
        attrs = {k: v for k, v in c.__dict__.items()
                 if not (k.startswith("__") and k.endswith("__")) and k != "_params_model"}
        code[f"{c.__module__}:{c.__qualname__}"] = values_digest(attrs)
    out: dict[str, Any] = {"version": version, "source": sources, "code": code}
    visited: set[str] = set()
    modules = code_digests(mro + uses, deps, bases, visited)
    for m in sources:  # a defining module is named once, by its source
        for k in (m.replace(".", "/") + ".py", m.replace(".", "/") + "/__init__.py"):
            modules.pop(k, None)
    # files the user's modules read at import or while the stage was built (not in a task)
    mine = {c.__module__ for c in own} | set(extra_modules) | visited
    modules.update(own_reads(sorted(m for m in mine if is_user_module(m)), bases))
    if modules:
        out["modules"] = modules
    if variables is not None:
        texts += [t for m in sorted(visited - set(sources)) if is_user_module(m)
                  for t in [_source_text(m)] if t]
        codes = [f.__code__ for o in objs for f in ([o] if inspect.isfunction(o) else
                 [v for v in vars(o).values() if inspect.isfunction(v)])]
        variables |= variable_names(texts, codes)
    return out


def _source_text(modname: str) -> str | None:
    """The source of a module of the user's, if it has one."""
    try:
        return inspect.getsource(sys.modules[modname])
    except (KeyError, OSError, TypeError):
        return None


def _dep_bases(modname: str) -> list[str]:
    """Where a stage's ``code_deps`` files are looked for: the folder holding the top-level
    package of the module defining it, then that module's own folder (a user's stage keeps
    its data beside its code, as curator's do beside the ``curator`` package)."""
    if modname == "curator" or modname.startswith("curator."):
        return []
    mod = sys.modules.get(modname)
    path = getattr(mod, "__file__", None)
    if not path:
        return []
    here = os.path.dirname(os.path.abspath(path))
    top = here
    for _ in range(modname.count(".") + (os.path.basename(path) == "__init__.py")):
        top = os.path.dirname(top)
    return list(dict.fromkeys([top, here]))


# -- identity of what was read ----------------------------------------------------------------

#: fsspec ``info()`` keys that identify a remote object's content, lowercased.
_REMOTE_KEYS = ("etag", "lastmodified", "last_modified", "last-modified", "mtime", "size",
                "content-length", "content_length", "version_id", "versionid", "generation",
                "md5hash", "crc32c")


def file_identity(path: str, storage_options: dict[str, Any] | None = None,
                  content: bool = False) -> dict[str, Any]:
    """Local file: size, mtime_ns, ctime_ns, inode (``content``: size and an xxh3-128 hash of
    its bytes instead). Remote object: what ``fs.info`` gives of ETag, Last-Modified, size (and
    version/generation/hash where the store has them).

    ``ctime`` is what catches a rewrite that kept the size and put the old mtime back
    (``cp -p``, ``rsync --times``, ``tar x``): no user call can set it, any write or
    ``utime`` moves it. It also moves on ``chmod`` or a new hard link (a harmless rerun)."""
    if "://" not in path or path.startswith("file://"):
        p = path.removeprefix("file://")
        try:
            st = os.stat(p)
        except OSError:
            return {"missing": True}
        if content:  # known by its bytes alone: a touch, a copy or a move reruns nothing
            return {"size": st.st_size, "xxh3_128": content_hash(p)}
        return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
                "inode": st.st_ino}
    import fsspec

    try:
        fs, rpath = fsspec.core.url_to_fs(path, **(storage_options or {}))
        info = fs.info(rpath)
    except (OSError, ValueError):
        return {"missing": True}
    out: dict[str, Any] = {}
    for k, v in info.items():
        if k.lower() in _REMOTE_KEYS and v is not None:
            out[k] = v if isinstance(v, int | float | str | bool) else str(v)
    return out or {"unknown": True}


def content_hash(path: str, chunk: int = 1 << 20) -> str:
    """xxh3-128 of a local file's bytes, read in 1 MiB pieces (about 10 GB/s of hashing:
    the disk sets the pace)."""
    import xxhash

    h = xxhash.xxh3_128()
    try:
        with open(path, "rb") as f:
            while block := f.read(chunk):
                h.update(block)
    except OSError:
        return "unreadable"
    return h.hexdigest()


def spec_paths(data: dict[str, Any]) -> list[str]:
    """Files a source shard reads, from its data: ``path``/``paths``, and ``url`` when it is a
    local file (remote downloads are identified by their URL and listed checksum instead: a
    HEAD request per file at every rerun would cost more than it is worth on immutable
    mirrors)."""
    out: list[str] = []
    for key in ("path", "paths"):
        v = data.get(key)
        out.extend([v] if isinstance(v, str) else [x for x in v or [] if isinstance(x, str)])
    url = data.get("url")
    if isinstance(url, str) and ("://" not in url or url.startswith("file://")):
        out.append(url)
    return out


def identities(paths: Iterable[str], storage_options: dict[str, Any] | None = None,
               content: bool = False) -> dict[str, dict[str, Any]]:
    """:func:`file_identity` of each distinct path (remote ones looked up in parallel;
    ``content``: local files hashed too)."""
    uniq = list(dict.fromkeys(paths))
    local = [p for p in uniq if "://" not in p or p.startswith("file://")]
    remote = [p for p in uniq if p not in set(local)]
    out = {p: file_identity(p, content=content) for p in local}
    if remote:
        with ThreadPoolExecutor(min(16, len(remote))) as pool:
            for p, ident in zip(remote, pool.map(
                    lambda x: file_identity(x, storage_options), remote), strict=True):
                out[p] = ident
    return out


def describe_input_change(old: dict[str, Any] | None, new: dict[str, Any]) -> str:
    """``data/a.jsonl (size, mtime_ns)``: which files of a shard changed and how."""
    if not old:
        return "no record of its inputs"
    parts = []
    for path, ident in new.items():
        was = old.get(path)
        if was is None:
            parts.append(f"{path} (new)")
        elif was != ident:
            what = sorted(k for k in set(was) | set(ident) if was.get(k) != ident.get(k))
            parts.append(f"{path} ({', '.join(what)})")
    parts += [f"{p} (gone)" for p in old if p not in new]
    return "; ".join(parts) or "shard data changed"


def explain(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """Why a stage's configuration fingerprint changed, in words: which parameter, which code,
    which upstream stage. Empty when the configuration is the same."""
    if not old:
        return ["no record of an earlier configuration"]
    out: list[str] = []
    if old.get("format") != new.get("format"):
        return ["results of an older curator (key format changed)"]
    if old.get("stage") != new.get("stage"):
        out.append(f"stage changed ({old.get('stage')} -> {new.get('stage')})")
    oc, nc = old.get("code") or {}, new.get("code") or {}
    if oc.get("version") != nc.get("version"):
        out.append(f"code version {oc.get('version')} -> {nc.get('version')}")
    sources = _changed_keys(oc.get("source"), nc.get("source"))
    mods = sources + _changed_keys(oc.get("modules"), nc.get("modules"))
    edited = {m.partition(":")[0] for m in sources}
    # a function's code or the values it uses, when no source said so already
    mods += [m for m in _changed_keys(oc.get("code"), nc.get("code"))
             if m.partition(":")[0] not in edited]
    # an installed package a module names in DISTRIBUTIONS (codehash): its version, not code
    dists = [m for m in mods if m.startswith("dist:")]
    mods = [m for m in mods if not m.startswith("dist:")]
    if mods:
        out.append(f"code of {', '.join(mods)} changed")
    oe, ne = old.get("env") or {}, new.get("env") or {}
    out += [f"environment variable {v} changed" for v in sorted(set(oe) | set(ne))
            if oe.get(v) != ne.get(v)]
    om, nm = oc.get("modules") or {}, nc.get("modules") or {}
    out += [f"installed {d[5:]} changed ({om.get(d, 'missing')} -> {nm.get(d, 'missing')})"
            for d in dists]
    changed = _changed_params(old.get("params") or {}, new.get("params") or {})
    # a parameter this curator added (or dropped) was not set by anyone: named, not "changed"
    added = [k for k, was, _ in changed if was is _ABSENT]
    gone = [k for k, _, now in changed if now is _ABSENT]
    if added:
        out.append(f"parameter{'s' * (len(added) > 1)} new in this curator: {', '.join(added)}")
    if gone:
        out.append(f"parameter{'s' * (len(gone) > 1)} no longer taken: {', '.join(gone)}")
    out += [f"parameter '{k}' changed ({_short(was)} -> {_short(now)})"
            for k, was, now in changed if was is not _ABSENT and now is not _ABSENT]
    if old.get("max_doc_mb") != new.get("max_doc_mb"):  # absent: the default
        out.append(f"max_doc_mb changed ({old.get('max_doc_mb', 'default')} -> "
                   f"{new.get('max_doc_mb', 'default')})")
    oi, ni = old.get("inputs") or {}, new.get("inputs") or {}
    if sorted(oi) != sorted(ni):
        out.append(f"inputs changed ({', '.join(sorted(oi)) or '-'} -> "
                   f"{', '.join(sorted(ni)) or '-'})")
    else:
        out += [f"upstream stage '{i}' changed" for i in sorted(ni) if oi[i] != ni[i]]
    return out


_ABSENT = object()


def _changed_params(old: dict[str, Any], new: dict[str, Any], prefix: str = ""
                    ) -> list[tuple[str, Any, Any]]:
    """``(dotted key, old value, new value)`` of each parameter that changed, naming the key
    inside a nested group (``redis.url``), not the whole group; a key only one side has is
    :data:`_ABSENT` on the other."""
    out: list[tuple[str, Any, Any]] = []
    for k in sorted(set(old) | set(new), key=str):
        was, now = old.get(k, _ABSENT), new.get(k, _ABSENT)
        if was == now:
            continue
        if isinstance(was, dict) and isinstance(now, dict):
            out += _changed_params(was, now, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", was, now))
    return out


def _changed_keys(old: dict[str, str] | None, new: dict[str, str] | None) -> list[str]:
    """Modules whose digest differs, appeared or went (a stage that now imports another)."""
    old, new = old or {}, new or {}
    return sorted(m for m in set(old) | set(new) if old.get(m) != new.get(m))


def _short(v: Any) -> str:
    s = orjson.dumps(v, default=str).decode()
    return s if len(s) <= 40 else s[:37] + "..."
