# Derived from trafilatura 2.3.1 (trafilatura/core.py), Copyright 2019-present, Adrien
# Barbaresi and contributors, under the Apache License 2.0 (LICENSE-trafilatura.txt here).
# Changed: see the package docstring (curator/extract/fastpath/__init__.py).
"""trafilatura's extraction cascade (``bare_extraction`` -> ``trafilatura_sequence``) for the
one call curator makes: a tree curator parsed (never copied: nothing reads it afterwards),
plain text out, no metadata, language or dedup; a ``fast=False`` rerun continues from the
fast pass (:class:`Stash`) instead of starting over.

**The backup tree.** ``_prepare_tree`` copies the cleaned tree before converting its tags;
that backup is read only without ``fast`` (the readability/jusText comparison) or with
comments on (a forum thread's posts converted again). :func:`_prepare_tree` makes it only
then (a whole-tree copy, ~1% of extraction CPU).

**Continuing a rerun.** ``extract_text``'s ``fast="auto"`` reruns without ``fast`` on about
one page in ten. trafilatura's ``_extract_and_compare`` is ``extract_content`` then, without
``fast``, ``compare_extraction``; every step before it reads ``fast`` nowhere (tree cleaning,
tag conversion, prunes), and ``extract_content`` reads it only for the teaser prune of the
wild-text recovery, which recall balance never runs. So a rerun with the same options but
``fast`` repeats the fast pass's work up to ``extract_content`` on a new parse of the same
page. The fast pass keeps (:class:`Stash`) its pruned raw tree, what ``extract_content``
returned and its options; the rerun continues with the comparison (:func:`_compared`), the
baseline rescue, and nothing else (the recall escalation needs balance ``balanced``, the forum
salvage comments). ``compare_extraction`` reads a cleaned copy of the raw tree and the raw
tree itself, neither of which the fast pass changed after the stash kept it; with focus
``recall`` and a text over ``10 * min_extracted_size`` neither is built.

A rerun in another balance (``default``, not ``precision``) starts from the same pruned raw
tree (:meth:`Stash.restartable`): the sequence begins with the same prunes in both focuses, so
they are skipped; its recall escalation's retry on that tree with the fast pass's options but
``fast`` is :func:`_compared` of the stash. Same texts as a fresh rerun on every gold page:
tests/extract/test_resume.py.
"""

from __future__ import annotations

from copy import copy
from typing import Any

from lxml.etree import Element, _Element, strip_tags
from lxml.html import HtmlElement
from trafilatura.baseline import baseline, html2txt
from trafilatura.core import (
    ESCALATION_ACCEPT_RATIO,
    ESCALATION_JUSTEXT_RATIO,
    ESCALATION_MAX_LENGTH,
    ESCALATION_PAGE_SHARE,
    LOGGER,
    _forum_thread_page,
)
from trafilatura.htmlprocessing import convert_tags, prune_unwanted_nodes
from trafilatura.main_extractor import _elem_text, extract_comments
from trafilatura.settings import DEFAULT_CONFIG, Extractor
from trafilatura.utils import normalize_unicode
from trafilatura.xml import xmltotxt
from trafilatura.xpaths import REMOVE_COMMENTS_XPATH

from curator.extract.fastpath.external import compare_extraction, justext_rescue
from curator.extract.fastpath.htmlprocessing import tree_cleaning
from curator.extract.fastpath.main_extractor import extract_content
from curator.extract.fastpath.xpaths import RAW_TREE_PRUNE_XPATH, REMOVE_COMMENTS_AND_LISTS_XPATH


class Stash:
    """What one page's fast pass leaves for its ``fast=False`` rerun: the pruned raw tree, the
    body and text ``extract_content`` returned, the options; ``key`` the caller's own options
    (the rerun continues only with the same ones). Per ``extract_text`` call, dropped with it."""

    __slots__ = ("body", "calls", "key", "options", "text", "tree")

    def __init__(self) -> None:
        self.key: tuple[Any, ...] = ()
        self.tree: Any = None
        self.body: Any = None
        self.text = ""
        self.options: Any = None
        self.calls = 0

    def ready(self, key: tuple[Any, ...]) -> bool:
        """Whether a rerun with the caller's options ``key`` can continue from this stash."""
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


#: What a stash's ``key`` holds, in order (curator/extract/adapters/trafilatura_text.py).
KEY_FIELDS = ("balance", "include_comments", "include_tables", "shape", "post_meta",
              "screen_reader_text", "collapsed_panels")


class _Pass:
    """How one extraction uses a stash: ``record`` (a fast pass keeps its state), ``resume``
    (continue after ``extract_content``), ``pruned`` and ``retry`` (a restart: the tree whose
    raw-tree prunes are done, the stash its recall retry continues from, once)."""

    __slots__ = ("pruned", "record", "resume", "retry")

    def __init__(self, record: Stash | None = None, resume: Stash | None = None,
                 restart: Stash | None = None) -> None:
        self.record, self.resume = record, resume
        self.pruned = restart.tree if restart is not None else None
        self.retry = restart


class NotResumable(Exception):
    """The rerun's options differ from the recorded ones (never expected): start afresh.
    Not a ValueError/TypeError, which the extraction turns into "no text"."""


def options_for(fast: bool, favor_precision: bool, favor_recall: bool, include_comments: bool,
                include_tables: bool) -> Extractor:
    """trafilatura's options for ``extract(tree, fast=..., favor_precision=...,
    favor_recall=..., include_comments=..., include_tables=..., deduplicate=False)``."""
    return Extractor(config=DEFAULT_CONFIG, output_format="txt", fast=fast,
                     precision=favor_precision, recall=favor_recall, comments=include_comments,
                     formatting=None, links=False, images=False, tables=include_tables,
                     dedup=False, lang=None, url=None, with_metadata=False,
                     only_with_metadata=False, tei_validation=False, author_blacklist=None,
                     url_blacklist=None, date_params=None)


def _recordable(options: Extractor) -> bool:
    """Options under which the module docstring's argument holds: fast, focus recall,
    comments off, plain text without formatting, metadata, language, dedup or tree size."""
    return (options.fast is True and options.focus == "recall" and not options.comments
            and options.format == "txt" and not options.formatting
            and not options.with_metadata and options.lang is None and not options.dedup
            and options.max_tree_size is None)


def _same_options(a: Any, b: Any, but: tuple[str, ...] = ("fast",)) -> bool:
    slots = type(a).__slots__
    return type(a) is type(b) and all(getattr(a, s) == getattr(b, s) for s in slots
                                      if s not in but)


def _prepare_tree(tree: HtmlElement, options: Extractor,
                  url: str | None) -> tuple[HtmlElement, HtmlElement | None]:
    """Clean and convert a raw tree, returning (converted, pre-conversion backup); the backup
    only where it is read: without ``fast`` or with comments (None otherwise)."""
    cleaned = tree_cleaning(copy(tree), options)
    backup = copy(cleaned) if (not options.fast or options.comments) else None
    cleaned = convert_tags(cleaned, options, url)
    return cleaned, backup


def _extract_and_compare(cleaned_tree: HtmlElement, cleaned_tree_backup: HtmlElement | None,
                         tree: HtmlElement, options: Extractor, p: _Pass) -> tuple[_Element, str]:
    """Cascade stages 1-2: main extractor, then the external comparison unless in fast mode;
    a recording pass keeps its pruned raw tree, the options and ``extract_content``'s result."""
    postbody, temp_text = extract_content(cleaned_tree, options)
    if not options.fast:
        postbody, temp_text = compare_extraction(cleaned_tree_backup, copy(tree), postbody,
                                                 temp_text, options)
    stash = p.record
    if stash is not None:
        stash.calls += 1
        if stash.calls == 1 and _recordable(options):
            stash.tree, stash.body, stash.text, stash.options = tree, postbody, temp_text, options
        else:
            stash.clear()
    return postbody, temp_text


def _compared(stash: Stash, tree: HtmlElement, options: Extractor) -> tuple[_Element, str]:
    """What :func:`_extract_and_compare` returns with ``fast`` off for the stash's pruned raw
    ``tree`` and recorded options (``fast`` aside): ``extract_content``'s result is the fast
    pass's, then ``compare_extraction``."""
    postbody, temp_text = stash.body, stash.text
    # compare_extraction's first lines: recall and a long text return the body as it is
    if not (options.focus == "recall" and len(temp_text) > options.min_extracted_size * 10):
        backup = tree_cleaning(copy(tree), options)  # _prepare_tree's backup
        postbody, temp_text = compare_extraction(backup, copy(tree), postbody, temp_text, options)
    return postbody, temp_text


def _recall_retry(esc_tree: HtmlElement, r_options: Extractor, url: str | None,
                  p: _Pass) -> tuple[_Element, str]:
    """Stage-4 retry: cascade stages 1-2 in recall mode on the escalation input; in a restart,
    the retry on the stashed tree with the recorded options (``fast`` aside) continues from
    the fast pass (:func:`_compared`), once."""
    stash, p.retry = p.retry, None
    if (stash is not None and esc_tree is stash.tree and not r_options.comments
            and _same_options(r_options, stash.options)):
        return _compared(stash, esc_tree, r_options)
    return _extract_and_compare(*_prepare_tree(esc_tree, r_options, url), esc_tree, r_options, p)


def _resumed(tree: HtmlElement, options: Extractor,
             stash: Stash) -> tuple[_Element, str, _Element, str]:
    """The sequence after ``extract_content`` with these options (``fast`` off, focus recall,
    comments off): the comparison and the baseline rescue."""
    if options.fast or not _same_options(options, stash.options):
        raise NotResumable
    postbody, temp_text = _compared(stash, tree, options)
    # 3. rescue: baseline on the original tree, accepted only if it adds text
    if len(temp_text) < options.min_extracted_size and options.focus != "precision":
        b_body, b_text, b_len = baseline(tree)  # baseline copies element inputs
        if b_len > len(temp_text):
            postbody, temp_text = b_body, b_text
    return postbody, temp_text, Element("body"), ""


def trafilatura_sequence(tree: HtmlElement, options: Extractor, url: str | None,
                         p: _Pass) -> tuple[_Element, str, _Element, str]:
    """Prepare the raw tree (cleaning, tag conversion, comment handling), then execute the
    standard cascade of extractors used by Trafilatura, each stage only engaging if the
    previous one under-delivered:
    1. main extractor (includes wild-text recovery for short documents)
    2. comparison with external extractors (readability/justext), skipped in fast mode
    3. baseline rescue on the original, uncleaned tree
    4. recall escalation, if the result still covers little of the page: stages 1-2 re-run
       in recall mode (_recall_retry), plus a justext candidate tried alongside
    Returns the body and comments elements with their text. ``p``: the stash's part."""
    if p.resume is not None:
        return _resumed(tree, options, p.resume)
    restarted = p.pruned is not None
    if restarted and (options.comments or options.focus == "precision" or tree is not p.pruned
                      or not _same_options(options, p.retry.options, ("fast", "focus"))):
        raise NotResumable
    is_forum = _forum_thread_page(tree)
    if not restarted:  # a restart's tree had these prunes in the fast pass
        # raw-tree prune so the external extractors inherit it too: readability would
        # otherwise pick the longest appended article over the real one
        tree = prune_unwanted_nodes(tree, RAW_TREE_PRUNE_XPATH)
        # comments off: prune the raw tree so all stages inherit it, lists are still ol/ul here
        if not options.comments and (options.focus == "precision" or not is_forum):
            tree = prune_unwanted_nodes(tree, REMOVE_COMMENTS_AND_LISTS_XPATH)
    cleaned_tree, cleaned_tree_backup = _prepare_tree(tree, options, url)

    commentsbody, temp_comments = Element("body"), ""
    forum_posts = None
    if options.comments:
        commentsbody, temp_comments, cleaned_tree = extract_comments(cleaned_tree, options)
        if temp_comments and is_forum:
            # thread-forum: the "comments" are the posts -> route into the body (backup
            # predates capture); keep the capture aside, salvaged below if the cascade drops them
            forum_posts = commentsbody
            commentsbody, temp_comments = Element("body"), ""
            cleaned_tree = convert_tags(copy(cleaned_tree_backup), options, url)
    if options.focus == "precision" and not is_forum:
        # NOT redundant with the raw-tree prune above: this runs POST-conversion, where lists
        # are <list> and match the xpath's self::list (dl lists, disqus ids, and all lists if
        # comments are on)
        cleaned_tree = prune_unwanted_nodes(cleaned_tree, REMOVE_COMMENTS_XPATH)

    postbody, temp_text = _extract_and_compare(cleaned_tree, cleaned_tree_backup, tree, options,
                                               p)

    # 3. rescue: baseline on the original tree, accepted only if it adds text (trafilatura #896)
    if len(temp_text) < options.min_extracted_size and options.focus != "precision":
        b_body, b_text, b_len = baseline(tree)  # baseline copies element inputs
        LOGGER.debug("non-clean extracted length: %s (extraction)", b_len)
        if b_len > len(temp_text):
            postbody, temp_text = b_body, b_text
            forum_posts = None  # the dump saw the whole page: missing posts are boilerplate

    # 4. recall escalation: a short extraction covering little of the page suggests
    # under-extraction (non-article layout) — retry in recall mode, keep if clearly bigger.
    if (
        options.focus == "balanced"
        and 0 < len(temp_text) < ESCALATION_MAX_LENGTH
        and len(temp_text) < ESCALATION_PAGE_SHARE * len(html2txt(tree))
    ):
        # a copy so a shared Extractor never leaks the "recall" focus back to the caller
        r_options = copy(options)
        r_options.focus = "recall"
        # strip comment containers from the escalation input (dup risk if captured, reader
        # comments if not), ol/ul comment lists only if captured (trafilatura #881). Not on a
        # thread-forum, where the retry rescues the posts. Comments off: already pruned
        esc_tree = (
            tree
            if is_forum or not options.comments
            else prune_unwanted_nodes(copy(tree), REMOVE_COMMENTS_AND_LISTS_XPATH
                                      if temp_comments else REMOVE_COMMENTS_XPATH)
        )
        r_text = ""
        try:
            r_body, r_text = _recall_retry(esc_tree, r_options, url, p)
        except Exception as err:  # pragma: no cover
            LOGGER.warning("recall retry failed: %s %s", err, url)
        # justext reaches div-buried content the rule retry misses (gated: ungated regressed
        # own-fallback). No region scoping of its own -> esc_tree is comment-pruned above
        j_text = ""
        if not options.fast:
            try:
                j_body, j_text = justext_rescue(copy(esc_tree), options)
            except Exception as err:  # pragma: no cover
                LOGGER.warning("justext candidate failed: %s %s", err, url)

        # floor on the retry: a result below the pipeline's own minimum is noise. An accepted
        # candidate saw the full page, so its exclusions are deliberate -> drop the forum salvage.
        len_text, r_len, j_len = len(temp_text), len(r_text), len(j_text)
        if j_len > r_len and j_len > ESCALATION_JUSTEXT_RATIO * len_text:
            postbody, temp_text, forum_posts = j_body, j_text, None
        elif r_len >= options.min_extracted_size and r_len > ESCALATION_ACCEPT_RATIO * len_text:
            postbody, temp_text, forum_posts = r_body, r_text, None

    if forum_posts is not None:
        # a gate (escalation length, precision) blocked the cascade from restoring the posts:
        # append the ones missing from the body
        existing = "\n".join(filter(None, (_elem_text(el) for el in postbody)))
        salvaged = [el for el in forum_posts if (t := _elem_text(el)) and t not in existing]
        if salvaged:
            LOGGER.debug("thread-forum salvage: %s captured posts appended to the body",
                         len(salvaged))
            postbody.extend(salvaged)
            temp_text = " ".join(postbody.itertext()).strip()

    return postbody, temp_text, commentsbody, temp_comments


def _text(tree: HtmlElement, options: Extractor, p: _Pass) -> str:
    """``bare_extraction`` then ``determine_returnstring`` of trafilatura for plain text
    without metadata: the tree is the caller's to spend (no copy), '' where trafilatura
    returns None."""
    try:
        postbody, temp_text, commentsbody, temp_comments = trafilatura_sequence(
            tree, options, options.url, p)
        if options.max_tree_size:
            if len(postbody) > options.max_tree_size:
                strip_tags(postbody, "hi")
            if len(postbody) > options.max_tree_size:
                raise ValueError
        if (len(temp_text) < options.min_output_size
                and len(temp_comments) < options.min_output_comm_size):
            LOGGER.debug("text and comments not long enough: %s %s %s", len(temp_text),
                         len(temp_comments), options.source)
            raise ValueError
    except (TypeError, ValueError):
        LOGGER.warning("discarding data: %s", options.source)
        return ""
    text = xmltotxt(postbody, options.formatting)
    # commentsbody is always an element: trafilatura appends its text, empty or not
    text = f"{text}\n{xmltotxt(commentsbody, options.formatting)}".strip()
    return normalize_unicode(text)


def extract(tree: HtmlElement, *, fast: bool, favor_precision: bool, favor_recall: bool,
            include_comments: bool, include_tables: bool, record: Stash | None = None,
            key: tuple[Any, ...] = ()) -> str:
    """``trafilatura.extract(tree, fast=..., favor_precision=..., favor_recall=...,
    include_comments=..., include_tables=..., deduplicate=False) or ""`` for a tree the
    caller never reads again; ``record``: a fast pass keeps its state there for a rerun with
    the caller's options ``key`` (:func:`rerun`)."""
    options = options_for(fast, favor_precision, favor_recall, include_comments, include_tables)
    if record is not None:
        record.key = key
    return _text(tree, options, _Pass(record=record))


def rerun(stash: Stash | None, key: tuple[Any, ...], *, favor_precision: bool,
          favor_recall: bool, include_comments: bool, include_tables: bool) -> str | None:
    """The ``fast=False`` extraction continued from the fast pass recorded into ``stash``:
    after ``extract_content`` when the caller's options ``key`` are the recorded ones, from
    the pruned raw tree when they differ in balance only (:meth:`Stash.restartable`); None
    when it cannot be (nothing recorded, other options): then the caller reruns afresh. The
    stash is emptied either way."""
    if stash is None:
        return None
    if stash.ready(key):
        p = _Pass(resume=stash)
    elif stash.restartable(key):
        p = _Pass(restart=stash)
    else:
        stash.clear()
        return None
    options = options_for(False, favor_precision, favor_recall, include_comments, include_tables)
    try:
        return _text(stash.tree, options, p)
    except NotResumable:
        return None
    finally:
        stash.clear()
