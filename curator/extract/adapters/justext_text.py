"""jusText's main text of a page: the paragraphs its stop-word classification keeps."""

from __future__ import annotations

from curator.extract.html_repair import XML_ILLEGAL

STOPLISTS: dict[str, frozenset[str]] = {}


def page_text(html: str, language: str = "English") -> str:
    import justext

    stop = STOPLISTS.get(language)
    if stop is None:
        stop = STOPLISTS[language] = justext.get_stoplist(language)
    from lxml.etree import ParserError

    # lxml refuses XML-illegal control characters (ValueError) and tag-free or empty input
    # (ParserError); cleaned here so that one odd page does not fail the whole shard.
    html = XML_ILLEGAL.sub(" ", html)
    try:
        paragraphs = justext.justext(html.encode("utf-8", "replace"), stop, encoding="utf-8")
    except ParserError:
        return ""
    return "\n\n".join(p.text for p in paragraphs if not p.is_boilerplate)
