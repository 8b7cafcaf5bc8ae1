# Derived from trafilatura 2.3.1 (trafilatura/main_extractor.py), Copyright 2019-present,
# Adrien Barbaresi and contributors, under the Apache License 2.0 (LICENSE-trafilatura.txt here).
# Changed: see the package docstring (curator/extract/fastpath/__init__.py).
"""trafilatura's main extractor (``extract_content``) with curator's XPath lists
(curator/extract/fastpath/xpaths.py) and link density loop (htmlprocessing.py); the element
handlers are trafilatura's."""

from __future__ import annotations

from copy import deepcopy

from lxml.etree import Element, _Element, strip_elements, strip_tags
from lxml.html import HtmlElement
from trafilatura.htmlprocessing import link_density_test_tables, process_node, prune_unwanted_nodes
from trafilatura.main_extractor import (
    LOGGER,
    NOT_AT_THE_END,
    REBUILT_BLOCKS,
    _elem_text,
    handle_textelem,
)
from trafilatura.settings import (
    DEDUPE_SCAN_CAP,
    INLINE_FORMATTABLE,
    MIN_DUPLICATE_LENGTH,
    TAG_CATALOG,
    Extractor,
)
from trafilatura.utils import SPACING_PROTECTED, text_chars_test, trim
from trafilatura.xml import delete_element
from trafilatura.xpaths import PRECISION_DISCARD_XPATH

from curator.extract.fastpath.htmlprocessing import delete_by_link_density
from curator.extract.fastpath.xpaths import (
    BODY_XPATH,
    DISCARD_IMAGE_ELEMENTS,
    OVERALL_DISCARD_XPATH,
    TEASER_DISCARD_XPATH,
)


def recover_wild_text(
    tree: HtmlElement,
    result_body: _Element,
    options: Extractor,
    potential_tags: set[str] | None = None,
    consumed: set[_Element] | None = None,
) -> _Element:
    """Look for all previously unconsidered wild elements, including outside of the determined
    frame and throughout the document to recover potentially missing text parts.

    Do not widen `search_expr` (e.g. headings, more div shapes) without benchmarking the
    full suite: extra recovered text increases the extracted length, which can suppress
    the stronger rescues that run after this one (compare_extraction, the baseline rescue,
    the recall escalation).
    """
    LOGGER.debug("Recovering wild text elements")
    # copy: the recall branch below mutates potential_tags, must not leak back to the caller
    potential_tags = set(TAG_CATALOG if potential_tags is None else potential_tags)
    # blockquote/pre/q are already renamed to quote/code by convert_tags before this tree is built
    search_expr = ".//code|.//p|.//quote|.//table|.//div[contains(@class, 'w3-code')]"
    if options.focus == "recall":
        potential_tags.update(["div", "lb"])
        search_expr += "|.//div|.//lb|.//list"
    # prune; in fast mode (no external comparator to defer to) keep teaser-class blocks, some of
    # which are real content — this is the last-resort path after the confident extractor failed
    search_tree = prune_unwanted_sections(tree, potential_tags, options, keep_teasers=options.fast)
    subelems = search_tree.xpath(search_expr)
    # dedup against the pre-main-pass snapshot: skip what the main pass already took -- exact
    # match (not length-gated, trafilatura #634; accepted cost: identical-text elements
    # collapse) or a length-gated substring (a <p> folded into its <list> container)
    elem_texts = [_elem_text(el) for el in result_body]
    # newline-joined (trimmed element text has no newline) so no substring match spans two elements
    existing = "\n".join(filter(None, elem_texts))
    existing_elems = set(elem_texts)
    # elements emitted or deduped whole: their descendants are covered
    handled: set[_Element] = set()
    for subelem in subelems:
        if (consumed and subelem in consumed) or any(a in handled for a in subelem.iterancestors()):
            continue
        processed = handle_textelem(subelem, potential_tags, options)
        if processed is None:
            continue
        if processed is subelem:
            handled.add(subelem)
        text = _elem_text(processed)
        # image-only blocks have no text to compare, check their sources against the live body
        images = {img.get("src") for img in processed.iter("graphic")}
        if not text and images and images <= {g.get("src") for g in result_body.iter("graphic")}:
            continue
        # past the cap, the substring scan is skipped and `existing` stops growing
        under_cap = len(existing) <= DEDUPE_SCAN_CAP
        # a copy carrying its source tail is a fragment of a text run: no length gate
        fragment = trim(text + (processed.tail or "")) if text_chars_test(processed.tail) else ""
        if text and (
            text in existing_elems
            or (
                under_cap
                and (
                    (len(text) > MIN_DUPLICATE_LENGTH and text in existing)
                    or (fragment and fragment in existing)
                )
            )
        ):
            continue
        result_body.append(processed)
        if under_cap:
            existing += "\n" + (fragment or text)
        existing_elems.add(text)
    return result_body


def prune_unwanted_sections(
    tree: HtmlElement,
    potential_tags: set[str],
    options: Extractor,
    keep_teasers: bool = False,
) -> HtmlElement:
    "Rule-based deletion of targeted document sections"
    favor_precision = options.focus == "precision"
    # prune the rest
    tree = prune_unwanted_nodes(tree, OVERALL_DISCARD_XPATH, with_backup=True)
    # decide if images are preserved
    if "graphic" not in potential_tags:
        tree = prune_unwanted_nodes(tree, DISCARD_IMAGE_ELEMENTS)
    # balance precision/recall
    if options.focus != "recall":
        # teaser-class blocks are sometimes real content; keep them on the recovery path,
        # which only runs once the confident extractor has already come up short
        if not keep_teasers:
            tree = prune_unwanted_nodes(tree, TEASER_DISCARD_XPATH)
        if favor_precision:
            tree = prune_unwanted_nodes(tree, PRECISION_DISCARD_XPATH)
    # remove elements by link density, several passes
    for _ in range(2):
        tree = delete_by_link_density(
            tree, "div", backtracking=True, favor_precision=favor_precision
        )
        tree = delete_by_link_density(
            tree, "list", backtracking=False, favor_precision=favor_precision
        )
        tree = delete_by_link_density(
            tree, "p", backtracking=False, favor_precision=favor_precision
        )
    # tables
    if "table" in potential_tags or favor_precision:
        # collect before deleting: removing a table mid-iteration can make tree.iter() skip a table
        # that follows a deleted one containing a nested table (iterator descends into the
        # detached subtree)
        boilerplate_tables = [
            elem for elem in tree.iter("table") if link_density_test_tables(elem) is True
        ]
        for elem in boilerplate_tables:
            delete_element(elem, keep_tail=False)
    if favor_precision:
        # delete trailing titles
        while len(tree) > 0 and (tree[-1].tag == "head"):
            delete_element(tree[-1], keep_tail=False)
        tree = delete_by_link_density(tree, "head", backtracking=False, favor_precision=True)
        tree = delete_by_link_density(tree, "quote", backtracking=False, favor_precision=True)
    # after the link density tests, which need the refs
    strip_tags(tree, "span", *(() if "ref" in potential_tags else ("ref",)))
    return tree


def _extract(tree: HtmlElement, options: Extractor) -> tuple[_Element, str, set[str]]:
    # init
    potential_tags = set(TAG_CATALOG)
    if options.tables is True:
        potential_tags.update(["table", "td", "th", "tr"])
    if options.images is True:
        potential_tags.add("graphic")
    if options.links is True:
        potential_tags.add("ref")
    result_body = Element("body")
    # iterate
    for expr in BODY_XPATH:
        # select tree if the expression has been found
        subtree = next((s for s in expr(tree) if s is not None), None)
        if subtree is None:
            continue
        # prune the subtree
        subtree = prune_unwanted_sections(subtree, potential_tags, options)
        # skip if empty tree
        if len(subtree) == 0:
            continue
        # no paragraphs containing text, or not enough
        ptest = subtree.xpath("//p//text()")
        factor = 1 if options.focus == "precision" else 3
        if not ptest or len("".join(ptest)) < options.min_extracted_size * factor:
            potential_tags.add("div")
        LOGGER.debug(sorted(potential_tags))

        subelems = subtree.xpath(".//*")
        # a single text run (only lb or inline elements): process the frame itself
        # lb-only frames go there unconditionally, a failed main pass then hands them to the
        # recovery
        tags = {e.tag for e in subelems}
        if tags == {"lb"} or (
            subtree.tag == "div" and "div" in potential_tags and tags <= INLINE_FORMATTABLE | {"lb"}
        ):
            subelems = [subtree]
        # the frame's own text before its first child, kept if the frame is accepted
        lead, start = None, len(result_body)
        if subelems != [subtree] and text_chars_test(subtree.text):
            lead = Element("p")
            lead.text = subtree.text
            lead = process_node(lead, options)
        # extract content
        for elem in subelems:
            # handle_other_elements() emits a text-bearing div as-is, children and all, and
            # appending it MOVES it into result_body. Its descendants are still in the list
            # captured above, so revisiting one would emit its text twice -- an <lb> whose tail
            # carries a paragraph turned into a duplicate of that paragraph. handle_paragraphs()
            # marks the children it consumes "done"; this covers the elements it cannot retag.
            if elem.getroottree().getroot() is result_body:
                continue
            # handlers may rename the element to "done", so read these first
            tag, tail = elem.tag, elem.tail
            processed_elem = handle_textelem(elem, potential_tags, options)
            if processed_elem is not None:
                result_body.append(processed_elem)
                # a copy leaves its source behind for a later, wider subtree
                if elem.getroottree().getroot() is not result_body:
                    elem.tag = "done"
            # text right after a rebuilt block is a paragraph of its own, like an <lb> tail,
            # unless the handler already carried it over (a code block copied as a whole)
            if (
                tag in REBUILT_BLOCKS
                and text_chars_test(tail)
                and (processed_elem is None or processed_elem.tail is None)
            ):
                tail_elem = Element("p")
                tail_elem.text = tail
                if process_node(tail_elem, options) is not None:
                    result_body.append(tail_elem)
        # remove trailing titles
        while len(result_body) > 0 and (result_body[-1].tag in NOT_AT_THE_END):
            delete_element(result_body[-1], keep_tail=False)
        # exit once there is real content, not just a lone image
        if sum(e.tag != "graphic" for e in result_body) > 1:
            LOGGER.debug(trim(str(expr)))
            if lead is not None:
                result_body.insert(start, lead)
            break
    temp_text = " ".join(result_body.itertext()).strip()
    return result_body, temp_text, potential_tags


def extract_content(cleaned_tree: HtmlElement, options: Extractor) -> tuple[_Element, str]:
    """Find the main content of a page using a set of XPath expressions,
    then extract relevant elements, strip them of unwanted subparts and
    convert them"""
    # backup
    backup_tree = deepcopy(cleaned_tree)
    # source order before the main pass moves elements, the backup keeps it
    order = list(cleaned_tree.iter())

    result_body, temp_text, potential_tags = _extract(cleaned_tree, options)

    # try parsing wild <p> elements if nothing found or text too short
    # todo: test precision and recall settings here
    if len(result_body) == 0 or len(temp_text) < options.min_extracted_size:
        # copies of what the main pass consumed are not recovered again
        consumed: set[_Element] = {
            twin for elem, twin in zip(order, backup_tree.iter(), strict=True) if elem.tag == "done"
        }
        result_body = recover_wild_text(backup_tree, result_body, options, potential_tags, consumed)
        temp_text = " ".join(result_body.itertext()).strip()
    # drop substantial elements repeating the previous one (overlapping-candidate / recovery
    # artifact);
    # length-gated so short genuine repeats stay for the dedup (trafilatura #778) and tree-size
    # guards
    previous = None
    for el in list(result_body):
        current = _elem_text(el)
        if current and current == previous and len(current) > MIN_DUPLICATE_LENGTH:
            delete_element(el, keep_tail=False)
        else:
            previous = current
    # filter output
    strip_elements(result_body, "done")
    strip_tags(result_body, "div")
    # stripping the divs above merges their indentation into the preceding <lb>'s tail, so an
    # <lb> that only separated pruned blocks (ad slots, clearfix spacers) ends up carrying a
    # run of whitespace -- rendered verbatim as blank, space-filled lines in txt/markdown.
    # Inside code/pre that whitespace is the indentation itself, so leave those alone.
    for linebreak in result_body.iter("lb"):
        if (
            linebreak.tail
            and not text_chars_test(linebreak.tail)
            and not any(anc.tag in SPACING_PROTECTED for anc in linebreak.iterancestors())
        ):
            linebreak.tail = None
    return result_body, temp_text
