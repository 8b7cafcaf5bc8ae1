"""The code a stage's results depend on, found and hashed without importing anything.

A built-in stage's fingerprint holds a digest of its module's source and of every curator
module of *stage logic* that module imports, directly or through others (found with
:mod:`ast`, so late imports inside functions count; imports under ``if TYPE_CHECKING:`` do
not). Editing a stage, or a text helper one of its filters calls, reruns that stage and what is
below it; nothing else does.

Which curator modules are followed, and why:

* followed: the stage families (``curator.filters``, ``curator.dedup``, ...), ``curator.text``,
  ``curator.models``, ``curator.base.document`` (``meta_value``: how stored signals are read;
  ``curator.base.document`` is its old name), ``curator.storage.encoding`` (how input bytes
  are decoded) and ``curator.storage.limits`` (what a reader keeps of an oversized record):
  code that decides what a stage outputs;
* not followed: the rest of ``curator.core`` (runner, pipeline, executors, report, the stage
  base classes), the rest of ``curator.storage`` (atomic writes, shard files, caps),
  ``curator.base.errors`` / ``redact``, the CLI. They run stages but do not decide their
  output, and a change there must not rerun every stage of every pipeline. A change in them
  that does alter outputs bumps :data:`curator.core.identity.KEY_FORMAT`.

A custom stage's own modules are followed the same way: the user's modules (outside the Python
installation, :func:`is_user_module`) that its module imports, transitively.

A stage lists what the import graph cannot show (a module it imports by a computed name, a data
file it reads) in ``code_deps``: module names, or files given relative to the folder holding
its top-level package (``curator/filters/models/lid.176.ftz`` for curator's; for a user's
``mods/stages.py``, ``mydata/x.txt`` is ``mods/mydata/x.txt``), then to its module's own
folder; they are hashed (and their imports followed) like the rest. Files it opens and modules
it imports while running are also recorded then (:mod:`curator.core.tracing`).

A module whose output depends on an installed package's version rather than on curator's
code (a word segmenter and its dictionary, :mod:`curator.text.words`) names those distributions
in a top-level ``DISTRIBUTIONS = ("jieba", ...)``: every stage importing it, directly or not,
has ``dist:<name>`` (the installed version, or ``missing``) among its digests, so results made
with another segmenter version are not reused.

Digests are of *content*, keyed by the module's path inside its package
(``curator/filters/rules.py``): the same code installed elsewhere, copied, or with other mtimes
gives the same keys. Comments, docstrings, blank lines and trailing spaces are left out, so
editing them reruns nothing. Each file is read and parsed once per process (kept while its size
and mtime are unchanged).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import re
import stat
import sys
import sysconfig
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: The ``curator`` package folder (this file is ``curator/core/codehash.py``).
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Curator modules (and packages) whose code is not part of a stage's identity.
NOT_FOLLOWED = ("curator.core", "curator.storage", "curator.base.errors", "curator.base.redact",
                "curator.cli", "curator.api", "curator.__main__")
#: Exceptions inside :data:`NOT_FOLLOWED`: they decide what a stage outputs.
FOLLOWED_ANYWAY = ("curator.storage.encoding", "curator.storage.limits")


@dataclass(frozen=True)
class _Module:
    """One file's digest and the curator modules it imports (``stamp``: size and mtime, to
    notice an edit in a long-lived process)."""

    key: str
    digest: str
    imports: tuple[str, ...]
    stamp: tuple[int, int]
    dists: tuple[str, ...] = ()


_CACHE: dict[str, _Module] = {}


def followed(name: str) -> bool:
    """Whether curator module ``name`` holds stage logic (see the module docstring)."""
    if name == "curator" or not name.startswith("curator."):
        return False
    if any(name == m or name.startswith(m + ".") for m in FOLLOWED_ANYWAY):
        return True
    return not any(name == m or name.startswith(m + ".") for m in NOT_FOLLOWED)


def code_digests(roots: Iterable[str], deps: Iterable[str] = (),
                 bases: Sequence[str] = (), visited: set[str] | None = None
                 ) -> dict[str, str]:
    """``{"curator/filters/rules.py": digest, ...}`` for the modules ``roots`` (module names),
    the declared ``deps`` (module names, or files relative to the first of ``bases`` that holds
    them; default: the folder holding the ``curator`` package) and every module they import,
    transitively: followed curator modules from anywhere, and the user's own modules
    (:func:`is_user_module`) from the user's modules. A module or file that cannot be found is
    recorded as ``missing`` (so it appearing later counts as a change). ``visited`` receives
    the name of every module followed."""
    out: dict[str, str] = {}
    todo = list(roots)
    for dep in deps:
        if "/" in dep or os.sep in dep:
            out[dep.replace(os.sep, "/")] = _file_digest(dep, bases)
        else:
            todo.append(dep)
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if visited is not None:
            visited.add(name)
        mod = _module(name)
        if mod is None:
            out[_key_of(name, None)] = "missing"
            continue
        out[mod.key] = mod.digest
        for d in mod.dists:
            out[f"dist:{d}"] = dist_version(d)
        todo += [i for i in (*mod.imports, *runtime_imports(name))
                 if followed(i) or (not _is_curator(name) and is_user_module(i))]
    return dict(sorted(out.items()))


#: Files the user's own modules read outside any task (at import, when a stage is built, in a
#: factory), by module name; filled by the audit hook (:mod:`curator.core.tracing`).
OWN_READS: dict[str, set[str]] = {}


#: What a module's import opens as code (source, compiled form, extension).
CODE_SUFFIXES = (*importlib.machinery.all_suffixes(), ".pyc")


def runtime_imports(name: str) -> list[str]:
    """Modules module ``name`` imported outside any task that its source does not show
    (``importlib.import_module("helper" + x)`` at import): the audit hook saw their code
    opened (:data:`OWN_READS`)."""
    paths = sorted(p for p in OWN_READS.get(name, ()) if p.endswith(CODE_SUFFIXES))
    if not paths:
        return []
    by_file = {os.path.abspath(f): n for n, m in list(sys.modules.items())
               if isinstance(f := getattr(m, "__file__", None), str)}
    return [by_file[p] for p in paths if p in by_file]


def own_reads(modules: Iterable[str], bases: Sequence[str] = ()) -> dict[str, str]:
    """``{file: digest}`` of what ``modules`` read outside any task: a list loaded into a
    global at import, a table read by ``setup()``. What they made of it (a compiled pattern,
    an array) is no value :mod:`curator.core.codeobj` can always see whole, so the file is
    keyed instead, named relative to the first of ``bases`` that holds it (as ``code_deps``).
    Code they opened is followed as a module instead (:func:`code_digests`)."""
    out: dict[str, str] = {}
    for path in sorted({p for m in modules for p in OWN_READS.get(m, ())
                        if not p.endswith(CODE_SUFFIXES)}):
        rel = next((os.path.relpath(path, b) for b in bases
                    if path.startswith(b.rstrip(os.sep) + os.sep)), path)
        out[rel.replace(os.sep, "/")] = _file_digest(path)
    return out


#: Environment variables never keyed: curator's own settings, where programs, libraries and
#: caches are found, who and where the process is (terminal, temporary folder), and what a
#: launcher sets per process (MPI ranks, Slurm, Dask's nanny and its thread counts), and how many
#: threads a library uses (``TOKENIZERS_PARALLELISM``, which a tokenizer also sets itself after a
#: fork): they differ between processes and runs and decide nothing a stage outputs.
_UNKEYED_PREFIXES = ("CURATOR_", "LD_", "PYTHON", "PMI_", "PMIX_", "HYDRA_", "HYDI_", "MPI_",
                     "MPIR_", "MPICH_", "OMPI_", "I_MPI_", "SLURM_", "DASK_", "XDG_", "SSH_")
_UNKEYED = frozenset(("PATH", "PWD", "OLDPWD", "SHLVL", "_", "HOME", "USER", "LOGNAME",
                      "HOSTNAME", "SHELL", "TERM", "COLUMNS", "LINES", "DISPLAY", "TMPDIR", "TMP",
                      "TEMP", "MALLOC_TRIM_THRESHOLD_", "OMP_NUM_THREADS", "MKL_NUM_THREADS",
                      "OPENBLAS_NUM_THREADS", "TOKENIZERS_PARALLELISM", "RAYON_NUM_THREADS",
                      "NUMEXPR_NUM_THREADS", "NUMEXPR_MAX_THREADS", "VECLIB_MAXIMUM_THREADS",
                      "BLIS_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_DEFAULT_NUM_THREADS",
                      "RAYON_RS_NUM_CPUS", "RUST_MIN_STACK", "CUDA_VISIBLE_DEVICES",
                      "HIP_VISIBLE_DEVICES",
                      "ROCR_VISIBLE_DEVICES", "RANK", "LOCAL_RANK", "WORLD_SIZE",
                      "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def keyed_variable(name: str) -> bool:
    """Whether a stage that reads environment variable ``name`` is keyed on its value."""
    return (bool(_VARIABLE.match(name)) and name not in _UNKEYED
            and not name.startswith(_UNKEYED_PREFIXES))


def variable_names(texts: Iterable[str], codes: Iterable[types.CodeType] = ()) -> set[str]:
    """Environment variables the user's code may read: each string constant of its sources and
    code objects (a function without a source file) that can name one (``os.environ["EXTRA"]``,
    ``os.getenv("EXTRA", "9")``) and is keyed (:func:`keyed_variable`). A name the code builds
    (``"EX" + "TRA"``) is not seen: a stage takes such a value as a parameter."""
    names: set[str] = set()
    for text in texts:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        names.update(n.value for n in ast.walk(tree)
                     if isinstance(n, ast.Constant) and isinstance(n.value, str))
    todo = list(codes)
    while todo:
        code = todo.pop()
        for c in code.co_consts:
            if isinstance(c, str):
                names.add(c)
            elif isinstance(c, types.CodeType):
                todo.append(c)
    return {n for n in names if keyed_variable(n)}


def _is_curator(name: str) -> bool:
    return name == "curator" or name.startswith("curator.")


#: Folders of the Python installation (as named and as resolved): standard library, packages.
_LIBRARY_DIRS: tuple[str, ...] | None = None
_LIBRARY: dict[str, bool] = {}
_USER: dict[str, bool] = {}


def library_dirs() -> tuple[str, ...]:
    """The folders of the Python installation (standard library, packages), as named and as
    resolved, each ending in a separator."""
    global _LIBRARY_DIRS
    if _LIBRARY_DIRS is None:
        paths = sysconfig.get_paths()
        dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
        dirs |= {p for p in sys.path if os.path.basename(p) in ("site-packages",
                                                                 "dist-packages")}
        forms = {f(d) for d in dirs if d for f in (os.path.normpath, os.path.realpath)}
        _LIBRARY_DIRS = tuple(sorted(d.rstrip(os.sep) + os.sep for d in forms))
    return _LIBRARY_DIRS


def library_file(path: str) -> bool:
    """Whether ``path`` (absolute) belongs to the Python installation (standard library,
    installed packages), not to curator's checkout or the user's code. Cached per path."""
    hit = _LIBRARY.get(path)
    if hit is None:
        root = ROOT.rstrip(os.sep) + os.sep
        if path.startswith(root):
            hit = False
        elif path.startswith(library_dirs()):
            hit = True
        else:
            real = os.path.realpath(path)
            hit = not real.startswith(root) and real.startswith(library_dirs())
        _LIBRARY[path] = hit
    return hit


def is_user_module(name: str) -> bool:
    """Whether module ``name`` is the user's own code: ``__main__`` (``python -c``, a
    notebook), or a module of a top-level package whose file lies outside the Python
    installation (a folder on ``PYTHONPATH``, an editable install). Neither curator nor an
    installed library is. Cached per top-level name."""
    if not name or _is_curator(name):
        return False
    top = name.partition(".")[0]
    hit = _USER.get(top)
    if hit is not None:
        return hit
    if top == "__main__":
        _USER[top] = True
        return True
    mod = sys.modules.get(top)
    origin = getattr(mod, "__file__", None) if mod is not None else None
    if origin is None and mod is None:
        try:
            spec = importlib.util.find_spec(top)  # a top-level name: nothing is imported
        except (ImportError, ValueError):
            spec = None
        origin = getattr(spec, "origin", None)
    user = bool(origin) and os.path.isabs(str(origin)) and not library_file(str(origin))
    if mod is not None or origin:  # a name not found yet may be made later (a test's module)
        _USER[top] = user
    return user


def source_imports(text: str, name: str, is_pkg: bool = False) -> list[str]:
    """Followed curator modules and the user's own modules imported by source ``text`` of
    (user) module ``name``."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [m for m in _scan(tree, name, is_pkg, user=True)[0]
            if followed(m) or is_user_module(m)]


# -- one module --------------------------------------------------------------------------------


def _module(name: str) -> _Module | None:
    path = _path_of(name)
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    stamp = (st.st_size, st.st_mtime_ns)
    hit = _CACHE.get(name)
    if hit is not None and hit.stamp == stamp:
        return hit
    try:
        raw, big = _read_source(path)
    except OSError:
        return None
    is_pkg = os.path.basename(path) == "__init__.py"
    parsed = None if raw is None else _parse(raw)
    if parsed is None:
        mod = _Module(_key_of(name, path), big if raw is None else _hash(raw), (), stamp)
    else:
        text, tree = parsed
        imports, doc_lines = _scan(tree, name, is_pkg, user=not _is_curator(name))
        mod = _Module(_key_of(name, path), _hash(_normalized(text, doc_lines).encode()),
                      tuple(imports), stamp, _distributions(tree))
    _CACHE[name] = mod
    return mod


def _distributions(tree: ast.Module) -> tuple[str, ...]:
    """The module's ``DISTRIBUTIONS = ("jieba", ...)``: installed packages (not imported at
    module level, or not followed) whose version decides what the module computes, such as a
    word segmenter and its dictionary. A literal tuple or list of strings at the top level."""
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 \
            else node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(target, ast.Name) and target.id == "DISTRIBUTIONS" and isinstance(
                node.value, ast.Tuple | ast.List):
            return tuple(e.value for e in node.value.elts
                         if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return ()


def dist_version(name: str) -> str:
    """The installed version of distribution ``name`` (its metadata, nothing imported), or
    ``missing``: installing, upgrading or removing it changes the keys of what used it."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "missing"


def _path_of(name: str) -> str | None:
    """The source file of module ``name``: curator's own found under :data:`ROOT` (nothing is
    imported), others through ``importlib`` (which imports their parent packages)."""
    if name == "curator" or name.startswith("curator."):
        base = os.path.join(ROOT, *name.split(".")[1:])
        for p in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(p):
                return p
        return None
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    origin = getattr(spec, "origin", None)
    # a compiled module (a C extension, a sourceless ``.pyc``) is a file too: keyed on its bytes
    return origin if origin and os.path.isabs(origin) and os.path.isfile(origin) else None


def _key_of(name: str, path: str | None) -> str:
    """``curator/filters/rules.py``: a module named by its place in its package, never by
    where the package is installed (a compiled one keeps its file's suffix:
    ``fastlim.cpython-311-x86_64-linux-gnu.so``)."""
    base = os.path.basename(path) if path else ""
    if base == "__init__.py":
        return name.replace(".", "/") + "/__init__.py"
    last = name.rpartition(".")[2]
    tail = base[len(last):] if base.startswith(last + ".") and not base.endswith(".py") else ".py"
    return name.replace(".", "/") + tail


def _file_digest(rel: str, bases: Sequence[str] = ()) -> str:
    """A declared data file, relative to the first of ``bases`` that holds it (default: the
    folder holding the ``curator`` package)."""
    candidates = [os.path.join(b, rel) for b in (*bases, os.path.dirname(ROOT))]
    path = next((p for p in candidates if os.path.exists(p)), candidates[0])
    h = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or device would never end
            return "missing"
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                h.update(block)
    except OSError:
        return "missing"
    return h.hexdigest()[:16]


def source_digest(path: str) -> str | None:
    """The digest of a Python file as a module's is taken (its code without comments or
    docstrings; its bytes when it does not parse), ``None`` when it cannot be read. Curator's
    own modules come from the cache the fingerprints filled."""
    root = ROOT.rstrip(os.sep) + os.sep
    if path.startswith(root):
        rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
        mod = _module(rel.removesuffix(".__init__"))
        if mod is not None and _path_of(rel.removesuffix(".__init__")) == path:
            return mod.digest
    try:
        raw, big = _read_source(path)
    except OSError:
        return None
    if raw is None:
        return big
    parsed = _parse(raw)
    if parsed is None:
        return _hash(raw)
    text, tree = parsed
    return _hash(_normalized(text, _scan(tree, "", False)[1]).encode())


#: Sources larger than this are keyed on their bytes: a syntax tree takes tens of times its
#: source's size, and generated modules that large carry no comments worth ignoring.
_MAX_PARSE = 8 << 20


def _parse(raw: bytes) -> tuple[str, ast.Module] | None:
    """(text, syntax tree) of a Python source, or None when it is too large or not Python."""
    if len(raw) > _MAX_PARSE:
        return None
    try:
        text = raw.decode("utf-8")
        return text, ast.parse(text)
    except (UnicodeDecodeError, SyntaxError, ValueError):
        return None


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _read_source(path: str) -> tuple[bytes | None, str]:
    """``(source, "")`` of a file small enough to parse, else ``(None, digest of its bytes)``
    read in 1 MiB blocks: a file over ``_MAX_PARSE`` is keyed on its bytes, never held whole."""
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size <= _MAX_PARSE:
            raw = f.read(_MAX_PARSE + 1)
            if len(raw) <= _MAX_PARSE:
                return raw, ""
            h = hashlib.sha256(raw)
        else:
            h = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return None, h.hexdigest()[:16]


def _scan(tree: ast.Module, name: str, is_pkg: bool, user: bool = False
          ) -> tuple[list[str], list[int]]:
    """Curator modules (``user``: and the user's own modules) imported anywhere in ``tree``
    (inside functions too; not under ``if TYPE_CHECKING:``), and the lines of statements that
    are only a string literal (docstrings). ``from a import b`` counts as ``a.b`` when that is
    a module, else as ``a``. Only statements are visited: an import is one, and skipping
    expressions keeps it cheap."""
    package = name if is_pkg else name.rpartition(".")[0]
    out: list[str] = []
    doc_lines: list[int] = []
    bodies: list[list[ast.stmt]] = [tree.body]
    while bodies:
        body = bodies.pop()
        for k, node in enumerate(body):
            if isinstance(node, ast.Import):
                out += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _absolute(node.module, node.level, package)
                for a in node.names if base else ():
                    sub = f"{base}.{a.name}"
                    mine = user and is_user_module(base)
                    out.append(sub if a.name != "*" and (
                        _path_of_curator(sub) or (mine and _path_of(sub))) else base)
            elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                  and isinstance(node.value.value, str)
                  and _alone(node, body[k - 1] if k else None,
                             body[k + 1] if k + 1 < len(body) else None)):
                doc_lines += range(node.lineno, (node.end_lineno or node.lineno) + 1)
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                bodies.append(node.orelse)
                continue
            for field in ("body", "orelse", "finalbody", "handlers", "cases"):
                sub = getattr(node, field, None)
                if isinstance(sub, list) and sub:
                    if field in ("handlers", "cases"):  # except / case clauses hold bodies
                        bodies += [h.body for h in sub]
                    elif isinstance(sub[0], ast.stmt):
                        bodies.append(sub)
    mods = [m for m in dict.fromkeys(out) if _is_curator(m) or (user and is_user_module(m))]
    return mods, doc_lines


def _alone(node: ast.stmt, before: ast.stmt | None, after: ast.stmt | None) -> bool:
    """Whether ``node`` shares no line with the statements beside it (``"doc"; x = 1``)."""
    return (before is None or (before.end_lineno or before.lineno) < node.lineno) and (
        after is None or after.lineno > (node.end_lineno or node.lineno))


def _path_of_curator(name: str) -> bool:
    return name.startswith("curator.") and _path_of(name) is not None


def _absolute(module: str | None, level: int, package: str) -> str | None:
    if not level:
        return module
    parts = package.split(".") if package else []
    if level - 1 > len(parts):
        return None
    base = ".".join(parts[:len(parts) - (level - 1)])
    return f"{base}.{module}" if module and base else (module or base or None)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


# -- what counts as a change -------------------------------------------------------------------


#: A string literal (kept as it is) or a comment (dropped), whichever starts first.
_STRING_OR_COMMENT = re.compile(
    r'''("""(?:\\.|[^\\])*?"""|\'\'\'(?:\\.|[^\\])*?\'\'\'|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')'''
    r"|#[^\n]*")


def _normalized(text: str, doc_lines: Iterable[int]) -> str:
    """``text`` without comments, docstrings (``doc_lines``: statements that are only a string
    literal), blank lines and trailing spaces: the same code whatever its comments say.
    Formatting inside a line still counts."""
    lines = text.split("\n")
    for i in doc_lines:
        if 0 < i <= len(lines):
            lines[i - 1] = ""
    code = _STRING_OR_COMMENT.sub(lambda m: m.group(1) or "", "\n".join(lines))
    kept = (ln.rstrip() for ln in code.split("\n"))
    return "\n".join(ln for ln in kept if ln)
