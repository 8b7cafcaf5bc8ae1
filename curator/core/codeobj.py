"""What a custom stage's callables compute, known from their code objects and the values they
use, not from a source file.

A function defined in ``python -c``, a notebook cell or by a factory (``make(200)``) has no
source file that says all it does: the factory's argument lives in a closure cell, a notebook's
threshold in a global. :func:`callable_digest` hashes a function by its code object (bytecode,
constants, names, nested code objects, recursively) and by every value it refers to: closure
cells, defaults, keyword defaults and the globals its code names (functions of the user's
own modules among them followed the same way; curator's and libraries' functions by name).
Two functions that compute the same thing from the same values get the same digest in every
process; change a constant, a closed-over value or a global the code reads, and the digest
changes.

What a value is made of: JSON-like values by content; functions and code by the above; modules
and classes by name (their code is hashed as modules, :mod:`curator.core.codehash`); a loaded
C library (``ctypes.CDLL``) by the name it was loaded by; any other object by its type and its
``repr`` when that shows no address, else by its type and its ``__dict__`` (one level).
"""

from __future__ import annotations

import ctypes
import hashlib
import types
from collections.abc import Callable
from typing import Any

from curator.core.codehash import is_user_module

#: How deep values are followed (a global holding a dict of lists of functions...).
MAX_DEPTH = 6


def callable_digest(fn: Callable[..., Any]) -> str:
    """A short, stable digest of what ``fn`` computes (see the module docstring)."""
    h = hashlib.sha256()
    _feed(h, fn, set(), 0)
    return h.hexdigest()[:16]


def values_digest(values: dict[str, Any]) -> str:
    """A digest of named values (a class's data attributes), each as :func:`callable_digest`
    sees values."""
    h = hashlib.sha256()
    for k in sorted(values):
        h.update(k.encode())
        _feed(h, values[k], set(), 0)
    return h.hexdigest()[:16]


def _feed(h: Any, obj: Any, seen: set[int], depth: int) -> None:
    """Add ``obj`` to hash ``h``; ``seen``: functions already in (recursion, mutual calls)."""
    if depth > MAX_DEPTH:
        h.update(b"<deep>")
        return
    if obj is None or isinstance(obj, bool | int | float | complex | str | bytes):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
        return
    if isinstance(obj, list | tuple | set | frozenset):
        items = sorted(obj, key=repr) if isinstance(obj, set | frozenset) else obj
        h.update(f"{type(obj).__name__}[{len(items)}]".encode())
        for v in items:
            _feed(h, v, seen, depth + 1)
        return
    if isinstance(obj, dict):
        h.update(f"dict[{len(obj)}]".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k, seen, depth + 1)
            _feed(h, obj[k], seen, depth + 1)
        return
    if isinstance(obj, staticmethod | classmethod):
        obj = obj.__func__
    if isinstance(obj, types.MethodType):
        obj = obj.__func__
    if isinstance(obj, types.FunctionType) and not is_user_module(obj.__module__):
        # curator's and libraries' functions: by name (their modules are hashed as code)
        h.update(f"fn:{obj.__module__}.{obj.__qualname__};".encode())
        return
    if isinstance(obj, types.FunctionType):
        if id(obj) in seen:
            h.update(f"<again {obj.__qualname__}>".encode())
            return
        seen.add(id(obj))
        _feed_function(h, obj, seen, depth)
        return
    if isinstance(obj, types.CodeType):
        _feed_code(h, obj, seen, depth)
        return
    if isinstance(obj, types.ModuleType):
        h.update(f"module:{obj.__name__};".encode())
        return
    if isinstance(obj, type):
        h.update(f"class:{obj.__module__}.{obj.__qualname__};".encode())
        return
    if isinstance(obj, types.BuiltinFunctionType):
        h.update(f"builtin:{getattr(obj, '__module__', '')}.{obj.__qualname__};".encode())
        return
    _feed_object(h, obj, seen, depth)


def _feed_function(h: Any, fn: types.FunctionType, seen: set[int], depth: int) -> None:
    h.update(f"fn:{fn.__qualname__};".encode())
    _feed_code(h, fn.__code__, seen, depth)
    _feed(h, fn.__defaults__, seen, depth + 1)
    _feed(h, fn.__kwdefaults__, seen, depth + 1)
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or (), strict=False):
        h.update(f"cell:{name}=".encode())
        try:
            _feed(h, cell.cell_contents, seen, depth + 1)
        except ValueError:  # an empty cell (a name bound later)
            h.update(b"<empty>")
    g = fn.__globals__
    for name in sorted(set(_global_names(fn.__code__))):
        if name in g:
            h.update(f"global:{name}=".encode())
            _feed(h, g[name], seen, depth + 1)


def _global_names(code: types.CodeType) -> list[str]:
    """Names a code object (and the code nested in it) may look up as globals."""
    out = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += _global_names(c)
    return out


def _feed_code(h: Any, code: types.CodeType, seen: set[int], depth: int) -> None:
    """Bytecode, constants (nested code recursively), names; not its file or line numbers,
    so the same function written elsewhere keeps its digest."""
    h.update(code.co_code)
    h.update(
        repr(
            (
                code.co_names,
                code.co_varnames,
                code.co_freevars,
                code.co_cellvars,
                code.co_argcount,
                code.co_kwonlyargcount,
                code.co_flags,
            )
        ).encode()
    )
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _feed_code(h, c, seen, depth + 1)
        else:
            _feed(h, c, seen, depth + 1)


def _feed_object(h: Any, obj: Any, seen: set[int], depth: int) -> None:
    kind = type(obj)
    h.update(f"obj:{kind.__module__}.{kind.__qualname__};".encode())
    if isinstance(obj, ctypes.CDLL):  # by the library it names, not its handle (an address)
        h.update(f"{obj._name};".encode("utf-8", "surrogatepass"))
        return
    try:
        text = repr(obj)
    except Exception:  # a broken __repr__ says nothing
        text = ""
    if text and " at 0x" not in text and " object at " not in text:
        h.update(text.encode("utf-8", "surrogatepass"))
        return
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        _feed(h, {k: v for k, v in attrs.items() if not k.startswith("_cache")}, seen, depth + 1)
