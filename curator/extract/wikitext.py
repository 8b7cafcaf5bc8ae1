"""Wikitext -> plain text with mwparserfromhell.

Drops what is not prose: templates (infoboxes, citations), ``<ref>`` notes, tables, file and
category links, HTML comments and magic words; keeps link labels, section headings (as their
own lines) and list items.
"""

from __future__ import annotations

import re

_DROP_TAGS = {"ref", "references", "gallery", "math", "score", "syntaxhighlight", "source",
              "timeline", "graph", "mapframe", "templatedata", "imagemap", "table"}
_MAGIC = re.compile(r"__[A-Z]+__")
_STYLE = re.compile(r"'{2,5}")  # bold/italic quotes (style tags are not parsed: faster)
_BLANKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]+")


def wikitext_to_text(wikitext: str, drop_link_namespaces: frozenset[str] = frozenset(
        {"file", "image", "category", "media"})) -> str:
    """Plain text of an article. ``drop_link_namespaces`` are lower-case link prefixes whose
    links are removed entirely (add the wiki's localized names of File and Category)."""
    import mwparserfromhell as mwp
    from mwparserfromhell.nodes import Comment, Heading, Tag, Template, Wikilink

    code = mwp.parse(wikitext, skip_style_tags=True)
    parts = []
    # One pass over the top-level nodes; Wikicode.remove() would rescan the tree per node.
    for node in code.nodes:
        if isinstance(node, Template | Comment):
            continue
        if isinstance(node, Tag) and str(node.tag).lower() in _DROP_TAGS:
            continue
        if isinstance(node, Wikilink):
            title = str(node.title).strip().lstrip(":")
            if ":" in title and title.split(":", 1)[0].strip().lower() in drop_link_namespaces:
                continue
        if isinstance(node, Heading):
            parts.append("\n\n" + node.title.strip_code().strip() + "\n")
        else:
            parts.append(node.__strip__(normalize=True, collapse=True, keep_template_params=False))
    text = "".join(p for p in parts if p)
    text = _STYLE.sub("", _MAGIC.sub("", text))
    lines = [_SPACES.sub(" ", ln).strip() for ln in text.split("\n")]
    text = "\n".join(ln for ln in lines if ln not in ("*", "#", ":", ";"))
    return _BLANKS.sub("\n\n", text).strip()
