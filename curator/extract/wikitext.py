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
_BLANKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]+")


def wikitext_to_text(wikitext: str, drop_link_namespaces: frozenset[str] = frozenset(
        {"file", "image", "category", "media"})) -> str:
    """Plain text of an article. ``drop_link_namespaces`` are lower-case link prefixes whose
    links are removed entirely (add the wiki's localized names of File and Category)."""
    import mwparserfromhell as mwp
    from mwparserfromhell.nodes import Comment, Heading, Tag, Template, Wikilink

    code = mwp.parse(wikitext, skip_style_tags=True)
    remove = []
    for node in code.ifilter(recursive=False):
        if isinstance(node, Template | Comment) or (
                isinstance(node, Tag) and str(node.tag).lower() in _DROP_TAGS):
            remove.append(node)
        elif isinstance(node, Wikilink):
            title = str(node.title).strip().lstrip(":")
            prefix = title.split(":", 1)[0].strip().lower() if ":" in title else ""
            if prefix in drop_link_namespaces:
                remove.append(node)
    for node in remove:
        try:
            code.remove(node)
        except ValueError:
            pass
    parts = []
    for node in code.nodes:
        if isinstance(node, Heading):
            parts.append("\n\n" + node.title.strip_code().strip() + "\n")
        else:
            parts.append(node.__strip__(normalize=True, collapse=True, keep_template_params=False)
                         if hasattr(node, "__strip__") else str(node))
    text = "".join(p for p in parts if p)
    text = _MAGIC.sub("", text)
    lines = [_SPACES.sub(" ", ln).strip() for ln in text.split("\n")]
    text = "\n".join(ln for ln in lines if ln not in ("*", "#", ":", ";"))
    return _BLANKS.sub("\n\n", text).strip()
