"""Wikitext -> plain text with mwparserfromhell.

Drops what is not prose: templates (infoboxes, citations), ``<ref>`` notes, tables (also inside
``<onlyinclude>``, ``<div>`` and other tags), file and category links, HTML comments, magic
words, the brackets that templates leave empty (``Albedo () or``, ``Andorra (; , )``) and
reference sections ("References", "External links", "See also"... in 29 languages, see
:data:`SECTIONS`); keeps link labels, section headings (as their own lines, only when text
follows them) and list items. A few inline templates that carry words of the sentence are
rendered (``{{convert|12|km}}`` -> "12 km", ``{{lang|fr|...}}``, ``{{nowrap|...}}``), and a
line holding only dropped templates no longer cuts a sentence in two.
"""

from __future__ import annotations

import re
from typing import Any

_DROP_TAGS = {"ref", "references", "gallery", "math", "score", "syntaxhighlight", "source",
              "timeline", "graph", "mapframe", "templatedata", "imagemap", "table",
              "includeonly", "chem", "ce", "hiero", "inputbox", "categorytree", "section"}
_MAGIC = re.compile(r"__[A-Z]+__")
_STYLE = re.compile(r"'{2,5}")  # bold/italic quotes (style tags are not parsed: faster)
_BLANKS = re.compile(r"\n{3,}")
_SPACES = re.compile(r"[ \t]+")
# A bracket left with only separators inside once its templates were dropped, and the space
# before it ("Andorra (; , ), officially" -> "Andorra, officially"); "f()" in code is kept.
_EMPTY_BRACKETS = re.compile(r"[ \t\u00a0]+[(\[][\s;,.:/·\u2013\u2014-]*[)\]]")
_DROPPED = "\x00"  # where a node was dropped (removed before the text is returned)
_HEAD = "\x01"  # a heading line: \x01<level>\x02<title>
_ITEM = "\x03"  # where a list item (``*``, ``#``, ``;``, ``:``) starts
# A line holding only dropped nodes between two lines of one paragraph: "flows\n{{cn}}\n into"
# reads "flows into" (MediaWiki renders the template inline; its removal must not cut the
# sentence). Not before a list item, heading, table or blank line.
_JOIN = re.compile(r"([^\n\x00])[ \t]*\n[ \t\x00]*\x00[ \t\x00]*\n[ \t]*"
                   r"(?=[^\s*#:;=|{\x00\x01\x03])")

# A line that held only dropped nodes goes away (it was not a paragraph break).
_ONLY_DROPPED = re.compile(r"(?m)^[ \t\x00]*\x00[ \t\x00]*\n")

#: Section titles (lower case) whose whole section is dropped, per wiki language: citations,
#: bare links and navigation lists, not prose. Compiled from the standard appendix headings
#: each Wikipedia's layout guide prescribes (en: WP:Layout "Standard appendices"; de:
#: Wikipedia:Formatvorlage; fr: Wikipédia:Conventions de plan; ...), the names its articles use
#: as level-2 headings. Words that also title prose sections ("Literatura" of a country, Italian
#: "Note" is kept: only "note" as a whole title) are left out where they are ambiguous.
SECTIONS: dict[str, frozenset[str]] = {k: frozenset(v) for k, v in {
    "en": {"references", "external links", "further reading", "see also", "notes",
           "bibliography", "sources", "footnotes", "citations", "notes and references",
           "references and notes", "external link", "reference", "works cited"},
    "de": {"einzelnachweise", "weblinks", "literatur", "siehe auch", "anmerkungen", "quellen",
           "belege", "fußnoten"},
    "fr": {"références", "liens externes", "voir aussi", "notes et références",
           "bibliographie", "notes", "articles connexes", "lien externe", "sources"},
    "es": {"referencias", "enlaces externos", "véase también", "bibliografía", "notas",
           "fuentes", "notas y referencias", "enlace externo"},
    "it": {"note", "bibliografia", "voci correlate", "collegamenti esterni", "altri progetti",
           "fonti"},
    "pt": {"referências", "ligações externas", "ver também", "bibliografia", "notas",
           "notas e referências", "fontes", "leitura adicional"},
    "nl": {"externe links", "externe link", "zie ook", "referenties", "bronnen", "noten",
           "bronvermelding", "bronnen, noten en/of referenties"},
    "pl": {"przypisy", "bibliografia", "linki zewnętrzne", "zobacz też", "uwagi"},
    "ru": {"примечания", "ссылки", "см. также", "источники", "литература"},
    "uk": {"примітки", "посилання", "див. також", "джерела", "література"},
    "sv": {"referenser", "externa länkar", "se även", "källor", "noter", "källhänvisningar"},
    "cs": {"reference", "externí odkazy", "související články", "poznámky"},
    "ja": {"脚注", "参考文献", "外部リンク", "関連項目", "出典", "注釈"},
    "zh": {"参考文献", "參考文獻", "外部链接", "外部連結", "参见", "參見", "参考资料", "參考資料",
           "注释", "註釋", "延伸阅读", "延伸閱讀", "相关条目", "相關條目"},
    "ar": {"مراجع", "المراجع", "وصلات خارجية", "انظر أيضا", "انظر أيضًا", "مصادر", "ملاحظات"},
    "fa": {"منابع", "پیوند به بیرون", "جستارهای وابسته", "یادداشت‌ها", "پانویس"},
    "tr": {"kaynakça", "dış bağlantılar", "ayrıca bakınız", "notlar", "kaynaklar"},
    "ko": {"각주", "외부 링크", "같이 보기", "참고 문헌", "참고문헌"},
    "vi": {"tham khảo", "liên kết ngoài", "xem thêm", "chú thích", "ghi chú"},
    "id": {"referensi", "pranala luar", "lihat pula", "lihat juga", "catatan kaki",
           "bacaan lanjutan"},
    "fi": {"lähteet", "aiheesta muualla", "katso myös", "viitteet", "kirjallisuutta"},
    "no": {"referanser", "eksterne lenker", "se også", "kilder"},
    "da": {"referencer", "eksterne henvisninger", "se også", "kilder"},
    "hu": {"jegyzetek", "források", "további információk", "kapcsolódó szócikkek",
           "külső hivatkozások"},
    "ro": {"note", "bibliografie", "legături externe", "vezi și"},
    "bg": {"източници", "външни препратки", "вижте също", "бележки"},
    "he": {"הערות שוליים", "קישורים חיצוניים", "ראו גם", "לקריאה נוספת", "מקורות"},
    "ca": {"referències", "enllaços externs", "vegeu també", "bibliografia", "notes"},
    "el": {"παραπομπές", "εξωτερικοί σύνδεσμοι", "δείτε επίσης", "βιβλιογραφία",
           "σημειώσεις"},
}.items()}
#: Every language's names at once (a dump of unknown language, and the old default).
DROP_SECTIONS = frozenset().union(*SECTIONS.values())


def drop_sections_for(language: str) -> frozenset[str]:
    """Section titles dropped in a wiki of ``language`` (``de``, ``zh_yue`` -> ``zh``): its own
    names plus the English ones (English headings occur everywhere); every known name for a
    language without a list."""
    lang = language.lower().replace("-", "_").split("_")[0]
    if lang == "nb":
        lang = "no"
    own = SECTIONS.get(lang)
    return DROP_SECTIONS if own is None else own | SECTIONS["en"]


#: Inline templates that carry words of their sentence: name -> which positional parameter
#: holds the text (``convert`` is special-cased: number(s) and unit).
_INLINE: dict[str, int] = {
    "lang": 2, "nowrap": 1, "nobr": 1, "small": 1, "smaller": 1, "big": 1, "smallcaps": 1,
    "sc": 1, "abbr": 1, "ill": 1, "interlanguage link": 1, "nihongo": 1, "transl": 2,
    "noitalic": 1, "script": 2, "keep together": 1,
}
_RANGE_WORDS = {"-", "–", "to", "and", "or", "by", "x", "×", "+", "&"}


def _inline(tpl: Any) -> str | None:
    """The words an inline template renders, or ``None`` to drop it."""
    name = tpl.name.strip_code().strip().lower().replace("_", " ")
    if name.startswith(("formatnum:", "#formatnum:")):  # a nested template leaves it empty
        return name.split(":", 1)[1].strip() or None
    pos = [p for p in tpl.params if not p.showkey]
    vals = [p.value.strip_code().strip() for p in pos]
    if name in ("convert", "cvt"):
        out: list[str] = []
        for v in vals:
            out.append(v)
            if not (v.replace(".", "", 1).replace(",", "").lstrip("-").isdigit()
                    or v.lower() in _RANGE_WORDS):
                break  # the unit
        return " ".join(out) if len(out) >= 2 else None
    k = 1 if name.startswith("lang-") else _INLINE.get(name)
    if not k or len(vals) < k:
        return None
    return vals[k - 1] or None


def wikitext_to_text(wikitext: str, drop_link_namespaces: frozenset[str] = frozenset(
        {"file", "image", "category", "media"}),
        drop_sections: frozenset[str] = DROP_SECTIONS) -> str:
    """Plain text of an article. ``drop_link_namespaces`` are lower-case link prefixes whose
    links are removed entirely (add the wiki's localized names of File and Category);
    ``drop_sections`` are lower-case section titles removed with their content (up to the
    next heading of the same or a higher level; :func:`drop_sections_for` gives a language's)."""
    import mwparserfromhell as mwp

    code = mwp.parse(wikitext, skip_style_tags=True)
    parts: list[str] = []
    _walk(code.nodes, parts, [0], drop_link_namespaces, drop_sections)
    text = "".join(p for p in parts if p)
    text = _JOIN.sub(r"\1 ", _STYLE.sub("", _MAGIC.sub("", text)))
    text = _ONLY_DROPPED.sub("", text).replace(_DROPPED, "").replace(_ITEM, "")
    text = _EMPTY_BRACKETS.sub("", text)
    return _finish(text)


def _walk(nodes: list[Any], parts: list[str], skip: list[int],
          drop_ns: frozenset[str], drop_sections: frozenset[str]) -> None:
    """Append the text of ``nodes`` to ``parts``; ``skip[0]``: inside a dropped section of
    that heading level. Tags with content (``<onlyinclude>``, ``<div>``, ...) are walked into,
    so what is dropped at the top level (tables, templates, file links) is dropped in them."""
    from mwparserfromhell.nodes import Comment, Heading, Tag, Template, Wikilink

    # One pass over the nodes; Wikicode.remove() would rescan the tree per node.
    for node in nodes:
        if isinstance(node, Heading):
            if skip[0] and node.level > skip[0]:
                continue
            skip[0] = 0
            title = node.title.strip_code().strip()
            if title.lower() in drop_sections:
                skip[0] = node.level
                continue
            parts.append(f"\n{_HEAD}{node.level}\x02{_SPACES.sub(' ', title)}\n")
            continue
        if skip[0]:
            continue
        if isinstance(node, Template):
            words = _inline(node)
            parts.append(words if words is not None else _DROPPED)
            continue
        if isinstance(node, Comment):
            parts.append(_DROPPED)
            continue
        if isinstance(node, Tag):
            tag = str(node.tag).lower()
            if tag in _DROP_TAGS:
                parts.append(_DROPPED)
                continue
            if tag in ("li", "dt", "dd") and node.wiki_markup:
                parts.append(_ITEM)
                continue
            if node.contents is not None and not node.self_closing and node.contents.nodes:
                _walk(node.contents.nodes, parts, skip, drop_ns, drop_sections)
                continue
        if isinstance(node, Wikilink):
            title = str(node.title).strip().lstrip(":")
            if ":" in title and title.split(":", 1)[0].strip().lower() in drop_ns:
                parts.append(_DROPPED)
                continue
        parts.append(node.__strip__(normalize=True, collapse=True, keep_template_params=False))


def _finish(text: str) -> str:
    """Lines tidied; a heading is kept only when text follows it before the next heading of
    its level or higher (an empty section, or one whose only content was dropped, leaves no
    title behind; nor does a title made only of templates)."""
    out: list[str] = []
    pending: list[tuple[int, str]] = []
    for raw in text.split("\n"):
        if raw.startswith(_HEAD):
            level_s, _, title = raw[1:].partition("\x02")
            level = int(level_s)
            pending = [(lv, t) for lv, t in pending if lv < level]
            pending.append((level, title.strip()))
            continue
        ln = _SPACES.sub(" ", raw).strip()
        if ln in ("*", "#", ":", ";"):
            continue
        if ln:
            for _, t in pending:
                if t:
                    out.extend(["", t, ""])
            pending = []
        out.append(ln)
    return _BLANKS.sub("\n\n", "\n".join(out)).strip()
