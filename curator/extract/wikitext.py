"""Wikitext -> plain text with mwparserfromhell.

Drops what is not prose: templates (infoboxes, citations), ``<ref>`` notes, tables, file and
category links, HTML comments, magic words, the brackets that templates leave empty
(``Albedo () or``, ``Andorra (; , )``) and reference sections ("References", "External links",
"See also"... : lists of citations and bare links); keeps link labels, section headings (as
their own lines) and list items.
"""

from __future__ import annotations

import re

_DROP_TAGS = {"ref", "references", "gallery", "math", "score", "syntaxhighlight", "source",
              "timeline", "graph", "mapframe", "templatedata", "imagemap", "table"}
_MAGIC = re.compile(r"__[A-Z]+__")
_STYLE = re.compile(r"'{2,5}")  # bold/italic quotes (style tags are not parsed: faster)
_BLANKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]+")
# A bracket left with only separators inside once its templates were dropped, and the space
# before it ("Andorra (; , ), officially" -> "Andorra, officially"); "f()" in code is kept.
_EMPTY_BRACKETS = re.compile(r"[ \t\u00a0]+[(\[][\s;,.:/·\u2013\u2014-]*[)\]]")
#: Section titles (lower case) whose whole section is dropped: citations, bare links and
#: navigation lists, not prose. English plus the German, French and Spanish names.
DROP_SECTIONS = frozenset({
    "references", "external links", "further reading", "see also", "notes", "bibliography",
    "sources", "footnotes", "citations", "notes and references", "references and notes",
    "einzelnachweise", "weblinks", "literatur", "siehe auch", "anmerkungen",
    "références", "liens externes", "voir aussi", "notes et références", "bibliographie",
    "referencias", "enlaces externos", "véase también", "bibliografía", "notas",
})


def wikitext_to_text(wikitext: str, drop_link_namespaces: frozenset[str] = frozenset(
        {"file", "image", "category", "media"}),
        drop_sections: frozenset[str] = DROP_SECTIONS) -> str:
    """Plain text of an article. ``drop_link_namespaces`` are lower-case link prefixes whose
    links are removed entirely (add the wiki's localized names of File and Category);
    ``drop_sections`` are lower-case section titles removed with their content (up to the
    next heading of the same or a higher level)."""
    import mwparserfromhell as mwp
    from mwparserfromhell.nodes import Comment, Heading, Tag, Template, Wikilink

    code = mwp.parse(wikitext, skip_style_tags=True)
    parts = []
    skip_level = 0  # inside a dropped section of this heading level
    # One pass over the top-level nodes; Wikicode.remove() would rescan the tree per node.
    for node in code.nodes:
        if isinstance(node, Heading):
            if skip_level and node.level > skip_level:
                continue
            skip_level = 0
            if node.title.strip_code().strip().lower() in drop_sections:
                skip_level = node.level
                continue
        elif skip_level:
            continue
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
    text = _EMPTY_BRACKETS.sub("", _STYLE.sub("", _MAGIC.sub("", text)))
    lines = [_SPACES.sub(" ", ln).strip() for ln in text.split("\n")]
    text = "\n".join(ln for ln in lines if ln not in ("*", "#", ":", ";"))
    return _BLANKS.sub("\n\n", text).strip()
