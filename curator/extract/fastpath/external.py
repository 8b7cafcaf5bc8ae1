# Derived from trafilatura 2.3.1 (trafilatura/external.py), Copyright 2019-present, Adrien
# Barbaresi and contributors, under the Apache License 2.0 (LICENSE-trafilatura.txt here), and
# from jusText 3.0.2 (justext/core.py: classify_paragraphs), Copyright (c) 2011 Jan Pomikalek,
# (c) 2013 Michal Belica, BSD 2-Clause (LICENSE-justext.txt). Changed: see the package docstring.
"""trafilatura's comparison with readability and jusText (``fast=False``), with curator's tree
cleaning and a jusText paragraph classification that reads each paragraph's text once."""

from __future__ import annotations

from typing import Any

from justext.core import ParagraphMaker, define_stoplist, revise_paragraph_classification
from justext.utils import get_stoplist, get_stoplists
from lxml.etree import Element, SubElement, _Element, strip_tags, tostring
from lxml.html import HtmlElement
from trafilatura.baseline import basic_cleaning
from trafilatura.external import (
    JUSTEXT_OVERRIDE_RATIO,
    LOGGER,
    SANITIZED_XPATH,
    _prefer_readability,
    try_readability,
)
from trafilatura.htmlprocessing import convert_tags, prune_unwanted_nodes
from trafilatura.main_extractor import handle_image
from trafilatura.settings import JUSTEXT_LANGUAGES, Extractor
from trafilatura.utils import trim
from trafilatura.xml import TEI_VALID_TAGS, delete_element
from trafilatura.xpaths import OVERALL_DISCARD_XPATH

from curator.extract.fastpath.htmlprocessing import tree_cleaning


def compare_extraction(
    cleaned_tree: HtmlElement,
    raw_tree: HtmlElement,
    body: _Element,
    text: str,
    options: Extractor,
) -> tuple[_Element, str]:
    """Decide whether to choose own or external extraction based on a series of heuristics.
    ``raw_tree`` (uncleaned) feeds readability; ``cleaned_tree`` (tree_cleaning'd, unconverted)
    feeds justext."""
    len_text = len(text)
    # bypass for recall
    if options.focus == "recall" and len_text > options.min_extracted_size * 10:
        return body, text

    # prior cleaning (trafilatura's XPath list, as its comparison reads it)
    if options.focus == "precision":
        raw_tree = prune_unwanted_nodes(raw_tree, OVERALL_DISCARD_XPATH)

    # try with readability
    temppost_algo = try_readability(raw_tree)
    # unicode fix necessary on certain systems (trafilatura #331)
    algo_text = trim(tostring(temppost_algo, method="text", encoding="utf-8").decode("utf-8"))
    len_algo = len(algo_text)
    LOGGER.debug("extracted length: %s (algorithm) %s (extraction)", len_algo, len_text)

    use_readability = _prefer_readability(body, temppost_algo, algo_text, len_text, len_algo,
                                          options)
    if use_readability:
        body, text, len_text = temppost_algo, algo_text, len_algo
    LOGGER.debug("using %s extraction: %s", "generic" if use_readability else "custom",
                 options.source)

    # override faulty extraction: try with justext
    unclean = bool(body.xpath(SANITIZED_XPATH))
    if unclean or len_text < options.min_extracted_size:
        LOGGER.debug("unclean or short document triggering justext examination: %s",
                     options.source)
        body2, text2 = justext_rescue(cleaned_tree, options)
        len_text2 = len(text2)
        # unclean: allow shorter (boilerplate dropped), guard image-heavy pages;
        # merely short: must add text, len_text2 > len_text is implied (trafilatura #896)
        if unclean:
            accept = len_text <= JUSTEXT_OVERRIDE_RATIO * len_text2 and (
                len_text2 > len_text or not options.images or body.find(".//graphic") is None
            )
        else:
            accept = len_text < len_text2
        if text2 and accept:
            LOGGER.debug("using justext, length: %s", len_text2)
            body, text, len_text = body2, text2, len_text2
            use_readability = False

    # post-processing: remove unwanted sections
    if use_readability:
        body, text = sanitize_tree(body, options)

    return body, text


#: All jusText stop lists in one tuple (trafilatura's ``JT_STOPLIST``, kept here so that
#: trafilatura's module global stays as it ships).
_JT_STOPLIST: list[tuple[str, ...]] = []


def jt_stoplist() -> tuple[str, ...]:
    "The content of all jusText stop lists."
    if not _JT_STOPLIST:
        _JT_STOPLIST.append(tuple({word for language in get_stoplists()
                                   for word in get_stoplist(language)}))
    return _JT_STOPLIST[0]


def try_justext(tree: HtmlElement, url: str | None, target_language: str | None) -> _Element:
    """Second safety net: try with the generic algorithm justext"""
    # init
    result_body = Element("body")
    # determine language
    if target_language in JUSTEXT_LANGUAGES:
        justext_stoplist = get_stoplist(JUSTEXT_LANGUAGES[target_language])
    else:
        justext_stoplist = jt_stoplist()
    # extract
    try:
        paragraphs = ParagraphMaker.make_paragraphs(tree)
        classify_paragraphs(paragraphs, justext_stoplist, 50, 150, 0.1, 0.2, 0.25, True)
        revise_paragraph_classification(paragraphs, 150)
    except Exception as err:
        LOGGER.error("justext %s %s", err, url)
    else:
        for paragraph in paragraphs:
            if not paragraph.is_boilerplate:
                SubElement(result_body, "p").text = paragraph.text
    return result_body


def justext_rescue(tree: HtmlElement, options: Extractor) -> tuple[_Element, str]:
    """Try to use justext algorithm as a second fallback"""
    temppost_algo = try_justext(basic_cleaning(tree), options.url, options.lang)
    return temppost_algo, trim(" ".join(temppost_algo.itertext()))


def sanitize_tree(tree: HtmlElement, options: Extractor) -> tuple[HtmlElement, str]:
    """Convert and sanitize the output from the generic algorithm (post-processing)"""
    # 1. clean
    cleaned_tree = tree_cleaning(tree, options)
    strip_tags(cleaned_tree, "span", *(() if options.links else ("a",)))
    # 2. convert (pass url so relative links are absolutized on the fallback path)
    cleaned_tree = convert_tags(cleaned_tree, options, options.url)
    for elem in list(cleaned_tree.iter("graphic")):
        image = handle_image(elem, options)
        if image is None:
            delete_element(elem)
        else:
            elem.attrib.clear()
            elem.attrib.update(image.attrib)
    # Mark first <th>-containing row per parent group as head (mirrors handle_table logic).
    # Groups by direct parent (the enclosing table once tbody/thead/tfoot are stripped
    # upstream); nested tables form their own group.
    seen_group_elems: set[_Element | None] = set()
    for tr in cleaned_tree.iter("tr"):
        parent = tr.getparent()
        if parent not in seen_group_elems and tr.find("th") is not None:
            seen_group_elems.add(parent)
            for c in tr.iterchildren("th"):
                c.set("role", "head")
    for elem in cleaned_tree.iter("td", "th", "tr"):
        elem.tag = "row" if elem.tag == "tr" else "cell"
    # 3. sanitize
    strip_tags(cleaned_tree,
               *({str(elem.tag) for elem in cleaned_tree.iter("*")} - TEI_VALID_TAGS))
    # 4. return
    return cleaned_tree, trim(" ".join(cleaned_tree.itertext()))


def classify_paragraphs(paragraphs: list[Any], stoplist: Any, length_low: int = 70,
                        length_high: int = 200, stopwords_low: float = 0.30,
                        stopwords_high: float = 0.32, max_link_density: float = 0.2,
                        no_headings: bool = False) -> None:
    """jusText's context-free paragraph classification, each paragraph's text read once.

    jusText's function reads ``Paragraph.text`` (a property: join the text nodes, strip,
    normalise whitespace with a regex callback) seven times a paragraph; here it is read once
    and ``Paragraph``'s density formulas are written over it (``stopwords_count /
    words_count``, 0 without words; ``chars_count_in_links / len(text)``, 0 without text):
    nothing writes a paragraph's text nodes during the classification, so every read gave the
    same string. Same classes as jusText's: tests/extract/test_justext_classify.py."""
    stoplist = _defined(stoplist)
    for paragraph in paragraphs:
        text = paragraph.text
        length = len(text)
        words = text.split()
        n_words = len(words)
        stopword_density = (sum(w.lower() in stoplist for w in words) / n_words
                            if n_words else 0)
        link_density = paragraph.chars_count_in_links / length if length else 0
        paragraph.heading = bool(not no_headings and paragraph.is_heading)

        # jusText's branches as jusText writes them (so the two read side by side)
        if link_density > max_link_density:  # noqa: SIM114
            paragraph.cf_class = "bad"
        elif ("\xa9" in text) or ("&copy" in text):  # noqa: SIM114
            paragraph.cf_class = "bad"
        elif "select" in paragraph.dom_path:
            paragraph.cf_class = "bad"
        elif length < length_low:
            if paragraph.chars_count_in_links > 0:
                paragraph.cf_class = "bad"
            else:
                paragraph.cf_class = "short"
        elif stopword_density >= stopwords_high:
            if length > length_high:
                paragraph.cf_class = "good"
            else:
                paragraph.cf_class = "neargood"
        elif stopword_density >= stopwords_low:
            paragraph.cf_class = "neargood"
        else:
            paragraph.cf_class = "bad"


#: the stop list given last and jusText's ``define_stoplist`` of it
_LAST: list[tuple[Any, frozenset[str]]] = []


def _defined(stoplist: Any) -> frozenset[str]:
    """``define_stoplist(stoplist)``, remembered for the object given last: the same tuple of
    all jusText's stop words (154,484 of them) comes on every call, and the ``lru_cache`` of
    ``define_stoplist`` hashed that tuple again each time (~0.8 ms). Only for tuples and
    frozensets: their words cannot change while the object lives."""
    if _LAST and _LAST[0][0] is stoplist:
        return _LAST[0][1]
    defined: frozenset[str] = define_stoplist(stoplist)
    if isinstance(stoplist, (tuple, frozenset)):
        _LAST[:] = [(stoplist, defined)]
    return defined
