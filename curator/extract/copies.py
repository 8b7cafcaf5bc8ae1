"""trafilatura's backup of the cleaned tree, made only where something can read it.

``trafilatura.core._prepare_tree`` cleans a copy of the raw tree, then copies the cleaned tree
(``backup = copy(cleaned)``) before converting its tags. In trafilatura 2.3.1 that backup is
read in two places only, both in ``core``:

* ``_extract_and_compare``: ``compare_extraction(backup, ...)`` when ``not options.fast``
  (readability/jusText comparison; ``_recall_retry`` goes through the same function with a copy
  of the options whose ``fast`` is the caller's);
* ``trafilatura_sequence``: ``convert_tags(copy(backup), ...)`` when ``options.comments`` is on
  and the page is a forum thread with comments captured.

With ``fast`` on and comments off (curator's first pass: ``fast=True``, ``favor_recall``,
``include_comments=False``) nothing reads it: it is a whole-tree copy thrown away (~1% of
extraction CPU). :func:`install` replaces ``core._prepare_tree`` by :func:`prepare_tree`, which
makes the backup only when ``not options.fast or options.comments`` and otherwise returns None
in its place; the cleaning and conversion are trafilatura's own functions, looked up in
``core`` at call time as the stock function does (so curator's ``core.copy``,
``extract_html._copy_unless_owned``, still applies). ``copy`` of an lxml element leaves the
source untouched, so leaving out an unread copy changes nothing else.

The argument holds for one text of ``core`` only: :func:`install` replaces the function when
the SHA-256 of ``trafilatura.core``'s source is :data:`CORE_SHA256` (trafilatura 2.3.1 as
``.[all]`` installs it); any other source keeps trafilatura's function. :func:`stock` puts
trafilatura's function back inside a block (benchmarks time peers as they ship).

Other whole-tree copies on that path are read and stay: the copy of the raw tree before
``tree_cleaning`` (``baseline(tree)`` reads the raw tree when the text is short, unless the
balance is precision), ``extract_content``'s ``deepcopy`` (wild-text recovery when the text is
short) and ``tree_cleaning``'s recall copy (already made only when no paragraph can survive).
"""
from __future__ import annotations

import inspect
from contextlib import AbstractContextManager
from types import ModuleType
from typing import Any

from curator.extract.twins import Swap, sha256

#: SHA-256 of ``inspect.getsource(trafilatura.core)`` (UTF-8) that the reasoning above was
#: checked against: trafilatura 2.3.1.
CORE_SHA256 = "a123aa052752d3dd1d5a1177ad37f03574456d08df1bcd2ec87971cf3f077825"


def _core() -> ModuleType:
    import trafilatura.core as core

    return core


def backup_read(options: Any) -> bool:
    """Whether trafilatura 2.3.1 can read the backup of a tree prepared with ``options``:
    without ``fast`` (its readability/jusText comparison) or with comments on (a forum
    thread's posts are converted again from it)."""
    return not options.fast or bool(options.comments)


def prepare_tree(tree: Any, options: Any, url: str | None) -> tuple[Any, Any]:
    """``core._prepare_tree`` (clean a copy of ``tree``, back it up, convert its tags), the
    backup made only when :func:`backup_read` (None in its place otherwise)."""
    core = _core()
    cleaned = core.tree_cleaning(core.copy(tree), options)
    backup = core.copy(cleaned) if backup_read(options) else None
    cleaned = core.convert_tags(cleaned, options, url)
    return cleaned, backup


_SWAP = Swap("trafilatura.core", {"_prepare_tree": prepare_tree})


def install(source: str | None = None) -> bool:
    """Use :func:`prepare_tree` as ``trafilatura.core._prepare_tree`` when ``source`` (by
    default ``trafilatura.core``'s own) is the text it was written for; True when it is in
    place."""
    return _SWAP.install(lambda: sha256(source or inspect.getsource(_core())) == CORE_SHA256)


def stock() -> AbstractContextManager[None]:
    """trafilatura's own ``_prepare_tree`` inside the block."""
    return _SWAP.stock()
