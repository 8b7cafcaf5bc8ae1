"""trafilatura's ``fast=False`` rerun continued from the fast pass instead of started again.

``extract_text`` (``fast="auto"``, ``balance="recall"``) runs trafilatura in fast mode, and on
about 8% of real web pages (the text is under half of resiliparse's words) runs it again with
``fast=False`` and the same options: a fresh parse, curator's tree edits, trafilatura's raw-tree
prunes, ``tree_cleaning``, ``convert_tags`` and ``extract_content``, then what ``fast=False``
adds (``compare_extraction``: readability, jusText). In trafilatura 2.3.1 with focus
``recall`` and comments off, everything up to and including ``extract_content`` is the same
computation in both modes:

* ``options.fast`` is read by ``core`` (``_extract_and_compare``'s comparison, the escalation's
  jusText candidate, the metadata and language checks) and by one line of ``main_extractor``
  (``recover_wild_text``'s ``keep_teasers``, which ``prune_unwanted_sections`` reads only when
  the focus is not ``recall``); ``htmlprocessing`` (``tree_cleaning``, ``convert_tags``) and
  ``settings.Extractor`` derive nothing else from it;
* the raw tree that ``trafilatura_sequence`` prunes and hands to ``_extract_and_compare`` is
  left intact by the rest of the fast pass: ``_prepare_tree`` cleans a copy, ``baseline``
  copies an element it is given, and the recall escalation (which could rerun stages on it)
  runs only in the ``balanced`` focus;
* the body ``extract_content`` returns is only read afterwards: the baseline rescue replaces
  it rather than edits it, ``bare_extraction`` strips tags from it only under a
  ``MAX_TREE_SIZE`` (unset), and ``xml.xmltotxt`` edits a tree only with formatting on (off
  for ``txt`` output).

So during the fast pass :func:`_extract_and_compare` keeps (per call, in a :class:`Stash`) the
pruned raw tree, the body and text ``extract_content`` returned and the options; the rerun
hands that tree to ``trafilatura.extract(fast=False, ...)`` and :func:`_sequence`, standing in
for ``trafilatura_sequence`` for that one call, continues where the stock function would be
after ``extract_content``: ``compare_extraction`` (its cleaned-tree input rebuilt from the raw
tree as ``tree_cleaning(copy(tree))``: ``tree_cleaning`` reads no ``fast``), the baseline rescue,
then trafilatura's own ``bare_extraction`` checks and text output. ``compare_extraction``
returns the body as it is, reading neither tree, when the focus is ``recall`` and the text is
over ``10 * MIN_EXTRACTED_SIZE`` characters: then neither tree is built. The rerun's text is the
one a fresh rerun gives on every page (tests/extract/test_resume.py); it costs about 60% less.

The ``<body>`` and thin-page reruns (``fast=False`` in ``default`` balance: focus ``balanced``)
start from the same pruned raw tree instead of a fresh parse (:func:`rerun` with the caller's
``key`` differing in balance only). ``trafilatura_sequence`` begins with the same steps in both
focuses: ``_forum_thread_page`` on the raw tree, the ``RAW_TREE_PRUNE_XPATH`` prune, and with
comments off the ``REMOVE_COMMENTS_AND_LISTS_XPATH`` prune unless the page is a forum thread
(``options.focus == "precision" or not is_forum``: the same for ``recall`` and ``balanced``).
The fresh rerun's raw tree is the fast pass's (the same ``load_html`` of the same page, the
same curator edits with the same options), so after those prunes it is the tree the stash
keeps, which the fast pass left intact (above). For that one call :func:`_sequence` runs
trafilatura's own ``trafilatura_sequence`` on the stashed tree with the two prune calls on it
returning it as it is (:func:`_prune_unwanted_nodes`: that tree and those two lists, as
``core`` names them at call time, only); ``is_forum``, computed again on the pruned tree,
is read afterwards only with comments on or in focus ``precision`` (neither is the case: the
rerun checks), so everything after the prunes is trafilatura's computation on the tree the
fresh rerun would have. Saved: the parse, curator's edits and the two prunes (about 5 ms on
each of the ~4% of real web pages that take these reruns).

Those reruns' recall escalation (a short text covering little of the page: about a third of
them) calls ``_recall_retry(tree, r_options)``: with comments off the escalation's tree is the
pruned raw tree itself, and ``r_options`` is the rerun's options with focus ``recall``, that is
the fast pass's but ``fast``. ``_recall_retry`` is ``_extract_and_compare`` on
``_prepare_tree(tree, r_options)``: ``extract_content``'s result is the fast pass's (the first
argument above; the stash keeps it unread), then ``compare_extraction`` with ``fast`` off. So
inside a restart :func:`_recall_retry` returns :func:`_compared` of the stash (what the ratio
rerun does after ``extract_content``), once, when the tree and options are those; it raises
nothing (trafilatura's escalation would swallow an exception as an empty retry).

The argument holds for one text of trafilatura only: :func:`install` puts the four functions
in ``trafilatura.core`` when the SHA-256 of each module it relies on is in :data:`SOURCES`
(trafilatura 2.3.1 as ``.[all]`` installs it); any other source keeps the fresh rerun.
:func:`stock` puts trafilatura's functions back inside a block.
"""
from __future__ import annotations

import copy
import importlib
import inspect
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from curator.extract.twins import Swap, sha256

#: SHA-256 of ``inspect.getsource(module)`` (UTF-8) of each trafilatura module the reasoning
#: above reads (trafilatura 2.3.1): ``core`` (the sequence continued here, ``bare_extraction``),
#: ``external`` (``compare_extraction``'s recall bypass), ``main_extractor`` and
#: ``htmlprocessing`` (where ``fast`` is read), ``baseline`` (copies its input), ``xml`` (text
#: output without formatting edits nothing), ``settings`` (``Extractor``).
SOURCES = {
    "trafilatura.core": "a123aa052752d3dd1d5a1177ad37f03574456d08df1bcd2ec87971cf3f077825",
    "trafilatura.external": "5f57921dc1724ab44c61523472801eef03bceb76ad3dc09e207eea7ed31ecfa8",
    "trafilatura.main_extractor":
        "08371cfa8748062900cc54bc985491be81efc614cef18069ab54ad98a498c620",
    "trafilatura.htmlprocessing":
        "321b9f064ef0f27e2a1d6601fe7f150f54a69ad059f016def843d7886e19f100",
    "trafilatura.baseline": "d24c746c809b8b1a9d54403c3046d12c25906b3c46db783bf739b05b1989f30c",
    "trafilatura.xml": "5169b63f284e9f10095c717c1d008b1508fcf7a2a55fd876b2c4b2067a799098",
    "trafilatura.settings": "ca1c3f742da3a3b23396095500dcbab147b6c2ef8433a7856ef2d510341754ae",
}

#: The stash the current thread's fast pass records into, or resumes from (Dask workers
#: extract in threads): set only for the duration of one ``trafilatura.extract`` call.
_LOCAL = threading.local()


class Stash:
    """What one page's fast pass leaves for its ``fast=False`` rerun: the pruned raw tree, the
    body and text ``extract_content`` returned, the options; ``key`` the caller's own options
    (the rerun resumes only with the same ones). Per ``extract_text`` call, dropped with it."""

    __slots__ = ("body", "calls", "key", "options", "text", "tree")

    def __init__(self) -> None:
        self.key: tuple[Any, ...] = ()
        self.tree: Any = None
        self.body: Any = None
        self.text = ""
        self.options: Any = None
        self.calls = 0

    def ready(self, key: tuple[Any, ...]) -> bool:
        """Whether a rerun with the caller's options ``key`` can resume from this stash."""
        return self.calls == 1 and self.tree is not None and key == self.key

    def restartable(self, key: tuple[Any, ...]) -> bool:
        """Whether a rerun with the caller's options ``key`` (:data:`KEY_FIELDS`) can start
        from this stash's pruned raw tree: another balance but precision, the rest the same
        (comments off: the stash holds nothing otherwise)."""
        return (self.calls == 1 and self.tree is not None and key[1:] == self.key[1:]
                and key[0] != "precision" and not key[1])

    def clear(self) -> None:
        self.tree = self.body = self.options = None
        self.calls = 2  # never ready again


def _core() -> Any:
    import trafilatura.core as core

    return core


def _recordable(options: Any) -> bool:
    """Options under which the argument of the module docstring holds: fast, focus recall,
    comments off, plain text without formatting, metadata, language, dedup or tree size."""
    return (options.fast is True and options.focus == "recall" and not options.comments
            and options.format == "txt" and not options.formatting
            and not options.with_metadata and options.lang is None and not options.dedup
            and options.max_tree_size is None)


def _extract_and_compare(cleaned_tree: Any, cleaned_tree_backup: Any, tree: Any,
                         options: Any) -> tuple[Any, str]:
    """trafilatura's ``_extract_and_compare``; a fast pass that records (:func:`recording`)
    also keeps its pruned raw tree, the options and what ``extract_content`` returned."""
    body, text = _SWAP.originals["_extract_and_compare"](cleaned_tree, cleaned_tree_backup,
                                                         tree, options)
    stash = getattr(_LOCAL, "record", None)
    if stash is not None:
        stash.calls += 1
        if stash.calls == 1 and _recordable(options):
            stash.tree, stash.body, stash.text, stash.options = tree, body, text, options
        else:
            stash.clear()
    return body, text


#: What ``key`` holds, in order: extract_html._trafilatura's options.
KEY_FIELDS = ("balance", "include_comments", "include_tables", "shape", "post_meta",
              "screen_reader_text", "collapsed_panels")


class _NotResumable(Exception):
    """The rerun's options differ from the recorded ones (never expected): start afresh.
    Not a ValueError/TypeError, which ``bare_extraction`` would turn into "no text"."""


def _same_options(a: Any, b: Any, but: tuple[str, ...] = ("fast",)) -> bool:
    slots = type(a).__slots__
    return type(a) is type(b) and all(getattr(a, s) == getattr(b, s) for s in slots
                                      if s not in but)


def _prune_unwanted_nodes(tree: Any, nodelist: Any, with_backup: bool = False) -> Any:
    """``prune_unwanted_nodes`` as ``core`` calls it, except the raw-tree prunes of the tree
    :func:`_sequence` started from the stash (they were made by the fast pass): that tree is
    returned as it is."""
    if tree is getattr(_LOCAL, "pruned", None) and not with_backup:
        core = _core()
        if nodelist is core.RAW_TREE_PRUNE_XPATH or \
                nodelist is core.REMOVE_COMMENTS_AND_LISTS_XPATH:
            return tree
    return _SWAP.originals["prune_unwanted_nodes"](tree, nodelist, with_backup)


def _restart(tree: Any, options: Any, url: str | None, stash: Stash) -> Any:
    """trafilatura's ``trafilatura_sequence`` on the stash's pruned raw tree, its raw-tree
    prunes skipped; raises :class:`_NotResumable` (nothing done) where the module
    docstring's argument does not hold."""
    if (options.comments or options.focus == "precision" or tree is not stash.tree
            or not _same_options(options, stash.options, ("fast", "focus"))):
        raise _NotResumable
    _LOCAL.pruned, _LOCAL.retry = tree, stash
    try:
        return _SWAP.originals["trafilatura_sequence"](tree, options, url)
    finally:
        _LOCAL.pruned = _LOCAL.retry = None


def _compared(stash: Stash, tree: Any, options: Any) -> tuple[Any, str]:
    """What ``_extract_and_compare`` returns with ``fast`` off for the stash's pruned raw
    ``tree`` and recorded options (``fast`` aside): ``extract_content``'s result is the fast
    pass's, then ``compare_extraction``."""
    core = _core()
    postbody, temp_text = stash.body, stash.text
    # compare_extraction's first lines: recall and a long text return the body as it is
    if not (options.focus == "recall" and len(temp_text) > options.min_extracted_size * 10):
        backup = core.tree_cleaning(copy.copy(tree), options)  # _prepare_tree's backup
        postbody, temp_text = core.compare_extraction(backup, copy.copy(tree), postbody,
                                                      temp_text, options)
    return postbody, temp_text


def _recall_retry(esc_tree: Any, r_options: Any, url: str | None) -> tuple[Any, str]:
    """trafilatura's ``_recall_retry``; inside a :func:`_restart`, the retry on the stashed
    tree with the recorded options (``fast`` aside) continues from the fast pass
    (:func:`_compared`), once."""
    stash = getattr(_LOCAL, "retry", None)
    if stash is not None:
        _LOCAL.retry = None
        if (esc_tree is stash.tree and not r_options.comments
                and _same_options(r_options, stash.options)):
            return _compared(stash, esc_tree, r_options)
    return _SWAP.originals["_recall_retry"](esc_tree, r_options, url)  # type: ignore[no-any-return]


def _sequence(tree: Any, options: Any, url: str | None = None) -> tuple[Any, str, Any, str]:
    """``trafilatura_sequence``; the one call :func:`rerun` marks continues from its stash
    after ``extract_content``, as the stock function does with these options (``fast`` off,
    focus recall, comments off): the comparison, the baseline rescue; the recall escalation
    (focus ``balanced`` only) and the forum salvage (comments on only) do not run."""
    restart = getattr(_LOCAL, "restart", None)
    if restart is not None:
        _LOCAL.restart = None
        return _restart(tree, options, url, restart)  # type: ignore[no-any-return]
    stash = getattr(_LOCAL, "resume", None)
    if stash is None:
        return _SWAP.originals["trafilatura_sequence"](  # type: ignore[no-any-return]
            tree, options, url)
    _LOCAL.resume = None
    if options.fast or not _same_options(options, stash.options):
        raise _NotResumable
    from lxml.etree import Element

    core = _core()
    postbody, temp_text = _compared(stash, tree, options)
    # 3. rescue: baseline on the original tree, accepted only if it adds text
    if len(temp_text) < options.min_extracted_size and options.focus != "precision":
        b_body, b_text, b_len = core.baseline(tree)  # baseline copies element inputs
        if b_len > len(temp_text):
            postbody, temp_text = b_body, b_text
    return postbody, temp_text, Element("body"), ""


@contextmanager
def recording(stash: Stash | None, key: tuple[Any, ...]) -> Iterator[None]:
    """The block's trafilatura call (a fast pass with the caller's options ``key``) records
    into ``stash`` (None: nothing)."""
    if stash is None:
        yield
        return
    stash.key = key
    _LOCAL.record = stash
    try:
        yield
    finally:
        _LOCAL.record = None


def rerun(stash: Stash | None, key: tuple[Any, ...], extract: Callable[[Any], str]) -> str | None:
    """``extract(tree)`` (``trafilatura.extract(tree, fast=False, ...)``) from the fast pass
    recorded into ``stash``: continued after ``extract_content`` when the caller's options
    ``key`` are the recorded ones, started from the pruned raw tree when they differ in
    balance only (:meth:`Stash.restartable`); None when it cannot be (nothing recorded, other
    options): then the caller reruns afresh. The stash is emptied either way."""
    if stash is None:
        return None
    if stash.ready(key):
        _LOCAL.resume = stash
    elif stash.restartable(key):
        _LOCAL.restart = stash
    else:
        stash.clear()
        return None
    try:
        return extract(stash.tree)
    except _NotResumable:
        return None
    finally:
        _LOCAL.resume = _LOCAL.restart = _LOCAL.pruned = _LOCAL.retry = None
        stash.clear()


#: trafilatura's own functions are kept in ``_SWAP.originals`` for :func:`stock` and for
#: every call that is not a recording or a resumption.
_SWAP = Swap("trafilatura.core", {"trafilatura_sequence": _sequence,
                                  "_extract_and_compare": _extract_and_compare,
                                  "prune_unwanted_nodes": _prune_unwanted_nodes,
                                  "_recall_retry": _recall_retry})


def installed() -> bool:
    """Whether trafilatura's reruns continue from the fast pass (see :func:`install`)."""
    return _SWAP.installed()


def _checked(sources: dict[str, str] | None) -> bool:
    for name, digest in SOURCES.items():
        text = (sources or {}).get(name)
        if text is None:
            text = inspect.getsource(importlib.import_module(name))
        if sha256(text) != digest:
            return False
    return True


def install(sources: dict[str, str] | None = None) -> bool:
    """Use :func:`_sequence`, :func:`_extract_and_compare`, :func:`_prune_unwanted_nodes` and
    :func:`_recall_retry` in ``trafilatura.core`` when
    each module's source (``sources``: module name -> its text, by default the installed
    ones) is the text this was written for; True when they are in place."""
    return _SWAP.install(lambda: _checked(sources))


def stock() -> AbstractContextManager[None]:
    """trafilatura's own functions inside the block (``extract_text`` reruns afresh)."""
    return _SWAP.stock()
