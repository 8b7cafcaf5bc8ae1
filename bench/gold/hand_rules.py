"""Gold main text built by hand for pages whose sources give no full gold text.

Each page of trafilatura's evaluation set (``tests/cache``/``tests/eval`` of adbar/trafilatura,
Apache-2.0) gets an explicit rule, written after reading the page: ``keep`` is an XPath whose
matches, in document order, hold the main text; ``drop`` is an XPath of parts inside them that
are not main text (share buttons, prices widgets, "add to cart", ratings UI...). The gold is the
text of what remains, one line per block element, checked by reading it. No extractor's output
is used. ``type`` is the page type, ``why`` says what a careful reader counts as main text.
"""

from __future__ import annotations

# file in adbar/trafilatura tests/eval (or tests/cache) -> rule
RULES: dict[str, dict[str, str]] = {
}


def rule_gold(html: str, rule: dict[str, str]) -> str:
    """The text a rule marks: ``keep`` matches minus ``drop`` matches, a line per block."""
    import lxml.html

    tree = lxml.html.fromstring(html)
    for bad in tree.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    if rule.get("drop"):
        for el in tree.xpath(rule["drop"]):
            if el.getparent() is not None:
                el.drop_tree()
    blocks = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote",
              "tr", "dt", "dd", "figcaption", "table", "ul", "ol", "section", "article", "br",
              "td", "th"}
    out = []
    kept = tree.xpath(rule["keep"])
    # an element inside another kept one is already in its text
    ids = {id(e) for e in kept}
    for el in kept:
        if any(id(a) in ids for a in el.iterancestors()):
            continue
        for sub in el.iter():
            if isinstance(sub.tag, str) and sub.tag in blocks:
                sub.tail = "\n" + (sub.tail or "")
        if isinstance(el.tag, str) and el.tag in {"td", "th"}:
            pass
        out.append(el.text_content())
    text = "\n".join(out)
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())
