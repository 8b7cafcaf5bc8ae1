"""``select``: keep documents whose metadata satisfies an expression, e.g.
``meta.quality_bucket >= 3 and meta.language in ['en', 'de']``.

Signals stored earlier (``mode: annotate`` presets, ``quality_buckets``, ``language_id``,
``pii_redact``) can so be filtered on later, RedPajama-V2 style, without recomputing them. The
expression is parsed with :mod:`ast` and evaluated by a small interpreter that knows only
comparisons, ``and``/``or``/``not``, constants, lists, ``meta.<key>`` / ``meta['<key>']``
(nested), ``id`` and ``length`` (characters of the text): no names, calls or attributes
beyond those, so nothing in a YAML file can run code. A missing key is ``None``, and any
ordering comparison with ``None`` is false (the document is not selected).

Hostile or careless expressions stay cheap: nesting deeper than :data:`MAX_DEPTH` is a one-line
configuration error (not a RecursionError), constant lists are built once (a constant list
after ``in`` becomes a set), an expression that fails on one document (``-meta.x`` where ``x``
is missing or a string) rejects that document as ``select_error`` with the error, and the
default rejection reason quotes a long expression only by its start and a digest.
"""

from __future__ import annotations

import ast
import hashlib
import operator
from collections.abc import Callable, Iterator
from typing import Any

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from curator.core.params import StageParams
from curator.core.stage import ShardStage

_MISSING = None
#: Deepest nesting of an expression (``not not ...``, brackets, ``meta.a.b...``); real filters
#: use a handful of levels, and the parser and compiler recurse per level.
MAX_DEPTH = 100
#: Longest expression quoted whole in a rejection reason or an error.
MAX_QUOTED = 100
#: What a per-document evaluation error can be (a bad operand type, ``-'x'``, an overflow).
_EVAL_ERRORS = (TypeError, ValueError, ArithmeticError, AttributeError, KeyError, IndexError)


_ORDER = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge}
_EQ = {ast.Eq: operator.eq, ast.NotEq: operator.ne}

Env = tuple[dict[str, Any], Document]
Fn = Callable[[Document], Any]


def short(expr: str) -> str:
    """``expr`` as quoted in reasons and errors: whole up to :data:`MAX_QUOTED` characters,
    else its start and a digest (a 100,000-item list must not be copied into every reason)."""
    if len(expr) <= MAX_QUOTED:
        return expr
    digest = hashlib.sha1(expr.encode("utf-8", "surrogatepass"),
                          usedforsecurity=False).hexdigest()[:8]
    return f"{expr[:60]}... ({len(expr)} chars, sha1 {digest})"


def _depth(node: ast.AST) -> int:
    """Nesting depth of ``node``, without recursion (so a hostile tree cannot overflow)."""
    deepest, stack = 0, [(node, 1)]
    while stack:
        n, d = stack.pop()
        deepest = max(deepest, d)
        if d <= MAX_DEPTH:  # past the limit the answer is known
            stack.extend((c, d + 1) for c in ast.iter_child_nodes(n))
    return deepest


def compile_expr(expr: str, what: str = "select.expr") -> Fn:
    """A function ``doc -> value`` for ``expr``; ``ConfigError`` naming the bad part."""
    too_deep = ConfigError(f"{what}: '{short(expr)}' is nested deeper than {MAX_DEPTH} levels; "
                           "write it flatter (e.g. 'meta.x in [...]' instead of a chain of "
                           "'or')")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        if "too many nested" in str(e.msg):
            raise too_deep from None
        raise ConfigError(f"{what}: '{short(expr)}' is not an expression: {e.msg}") from None
    except (RecursionError, MemoryError):  # the parser's own stack (~1,000 levels)
        raise too_deep from None
    if _depth(tree.body) > MAX_DEPTH:
        raise too_deep
    return _compile(tree.body, short(expr), what)


def _constant(node: ast.AST) -> tuple[bool, Any]:
    """``(True, value)`` when ``node`` is a constant or a (nested) list of constants."""
    if isinstance(node, ast.Constant):
        return True, node.value
    if isinstance(node, ast.Name) and node.id in ("None", "True", "False"):
        return True, {"None": None, "True": True, "False": False}[node.id]
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        out = []
        for e in node.elts:
            ok, v = _constant(e)
            if not ok:
                return False, None
            out.append(v)
        return True, out
    return False, None


def _meta_path(node: ast.AST) -> str | None:
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            parts.append(node.slice.value)
            node = node.value
        else:
            break
    if isinstance(node, ast.Name) and node.id == "meta" and parts:
        return "\0".join(reversed(parts))
    return None


def _lookup(path: list[str]) -> Fn:
    def get(doc: Document) -> Any:
        cur: Any = doc.meta
        for p in path:
            if not isinstance(cur, dict) or p not in cur:
                return _MISSING
            cur = cur[p]
        return cur
    return get


def _compile(node: ast.AST, expr: str, what: str) -> Fn:
    def bad(msg: str) -> ConfigError:
        return ConfigError(f"{what}: '{expr}': {msg} (allowed: comparisons, and/or/not, "
                           "constants, lists, meta.<key>, meta['<key>'], id, length)")

    const, value = _constant(node)
    if const:  # built once, here, not once per document
        return lambda doc: value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [_compile(e, expr, what) for e in node.elts]
        return lambda doc: [f(doc) for f in items]
    if isinstance(node, ast.Name):
        if node.id == "id":
            return lambda doc: doc.id
        if node.id == "length":
            return lambda doc: len(doc.text)
        if node.id in ("None", "True", "False"):
            v = {"None": None, "True": True, "False": False}[node.id]
            return lambda doc: v
        raise bad(f"unknown name '{node.id}'")
    if isinstance(node, (ast.Attribute, ast.Subscript)):
        path = _meta_path(node)
        if path is None:
            raise bad("only meta.<key> or meta['<key>'] can be looked up")
        return _lookup(path.split("\0"))
    if isinstance(node, ast.UnaryOp):
        inner = _compile(node.operand, expr, what)
        if isinstance(node.op, ast.Not):
            return lambda doc: not inner(doc)
        if isinstance(node.op, ast.USub):
            return lambda doc: -inner(doc)
        raise bad("unsupported unary operator")
    if isinstance(node, ast.BoolOp):
        parts = [_compile(v, expr, what) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda doc: all(p(doc) for p in parts)
        return lambda doc: any(p(doc) for p in parts)
    if isinstance(node, ast.Compare):
        left = _compile(node.left, expr, what)
        rights = [_compile(c, expr, what) if not isinstance(op, (ast.In, ast.NotIn))
                  else _member_set(c) or _compile(c, expr, what)
                  for op, c in zip(node.ops, node.comparators)]
        ops = []
        for op in node.ops:
            if type(op) in _ORDER:
                ops.append(_ordered(_ORDER[type(op)]))
            elif type(op) in _EQ:
                ops.append(_EQ[type(op)])
            elif isinstance(op, ast.In):
                ops.append(_contains)
            elif isinstance(op, ast.NotIn):
                ops.append(lambda a, b: not _contains(a, b))
            else:
                raise bad("unsupported comparison")

        def compare(doc: Document) -> bool:
            a = left(doc)
            for op, r in zip(ops, rights):
                b = r(doc)
                if not op(a, b):
                    return False
                a = b
            return True
        return compare
    raise bad(f"'{short(ast.unparse(node))}' is not allowed")


def _member_set(node: ast.AST) -> Fn | None:
    """A constant list after ``in`` as a frozenset (one hash probe instead of a scan), when
    all its items are hashable; membership answers the same (``==`` on the same values)."""
    const, value = _constant(node)
    if not const or not isinstance(value, list):
        return None
    try:
        items = frozenset(value)
    except TypeError:  # a list inside the list
        return None
    return lambda doc: items


def _ordered(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def cmp(a: Any, b: Any) -> bool:
        if a is None or b is None:
            return False
        try:
            return bool(op(a, b))
        except TypeError:
            return False  # '3' < 4: not comparable, not selected
    return cmp


def _contains(a: Any, b: Any) -> bool:
    try:
        return a in b
    except TypeError:
        return False


class Select(ShardStage):
    """Keep documents whose metadata satisfies ``expr`` (e.g. ``meta.quality_bucket >= 3``);
    parsed safely, never evaluated as Python."""

    name = "select"

    class Params(StageParams):
        expr: str
        """A condition on ``meta`` (``meta.quality_bucket >= 3``), parsed, never evaluated."""
        reason: str | None = None
        """`select:<expr>` (expressions over 100 characters: `select:<first 60>... (<n> chars, sha1
        <8 hex>)`)."""

    def setup(self) -> None:
        self.reason = self.reason or f"select:{short(self.expr)}"
        self._cache_fn = compile_expr(self.expr)

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        fn = getattr(self, "_cache_fn", None) or compile_expr(self.expr)
        self._cache_fn = fn
        for doc in docs:
            try:
                keep = bool(fn(doc))
            except _EVAL_ERRORS as e:
                # one document's values do not fit the expression: reject it, keep going
                ctx.reject(doc, "select_error", error=f"{type(e).__name__}: {e}"[:200])
                continue
            if keep:
                yield doc
            else:
                ctx.reject(doc, self.reason)
