"""The shape of trafilatura's text (``shape=True``): table rows as tab-separated cells, no
separator rows or documentation UI lines, code keeps its indentation, other lines lose the
source's blanks."""

from __future__ import annotations

import re

from curator.extract.tree_edits import LOOKED_UP

# The same strings when they reach the text some other way (one line of their own).
_UI_LINES = frozenset({"Expand description", "Collapse description", "Skip navigation links",
                       "Skip to content", "Skip to main content", "More...", "[src]", "source",
                       "¶", "§", "Copy", "Copy to clipboard", "Hide whitespace changes"})


_PERMALINK_TAIL = re.compile(r"[ \t]*[¶§]$")


# trafilatura's table rows are "| cell | cell | " (cell pipes escaped as "\|") and its head
# separator is exactly "|---|---|"; Markdown tables shown inside code blocks have no trailing
# space, so they are left as they are.
_TABLE_RULE = re.compile(r"^\|(---\|)+$")


#: Tags whose text keeps its lines and their indentation (code, preformatted text): the tags
#: whose text the wrapped-line join leaves alone, but <script>/<style>.
_CODE_TAG = re.compile(rf"<(?:{'|'.join(LOOKED_UP)})\b", re.IGNORECASE)


# Those with an end tag (<plaintext> runs to the end of the page). [^<>]: an open tag's scan
# stops at the next "<" (a page of "<pre<pre..." without ">" stays linear).
_CLOSED_CODE = tuple(t for t in LOOKED_UP if t != "plaintext")


_CODE_OPEN = re.compile(rf"<({'|'.join(_CLOSED_CODE)})\b[^<>]*>", re.IGNORECASE)


_CODE_CLOSE = {t: re.compile(f"</{t}", re.IGNORECASE) for t in _CLOSED_CODE}


def _code_lines(html: str) -> set[str]:
    """The lines (stripped) of the page's code and preformatted elements, read from the source
    (tags removed, entities decoded): what may keep its indentation in the text. Linear: the
    search for an end tag scans up to it and the next element starts after it; once a tag's
    end is missing from some point on, later ones of that tag are not searched for."""
    from html import unescape

    out: set[str] = set()
    unclosed: set[str] = set()
    pos = 0
    while m := _CODE_OPEN.search(html, pos):
        tag = m.group(1).lower()
        close = None if tag in unclosed else _CODE_CLOSE[tag].search(html, m.end())
        if close is None:
            unclosed.add(tag)
            pos = m.end()
            continue
        text = unescape(TAG.sub("", html[m.end():close.start()]))
        out.update(x.strip() for x in text.split("\n"))
        pos = close.start()
    return out


#: A nested list item as trafilatura writes it ("  - item"): its indentation is structure.
_LIST_INDENT = re.compile(r" +- ")


TAG = re.compile(r"<[^<>]*>")


def shape_text(text: str, html: str = "") -> str:
    """Tables as tab-separated cells (trafilatura writes Markdown pipes, which Gopher's
    alpha-words rule counts as symbol words), no separator rows, no UI strings, no "¶"; the
    source's blanks around lines gone (trafilatura's cascade keeps the HTML's indentation and
    whitespace-only lines between blocks). On a page with code (``html`` has a
    :data:`_CODE_TAG`) a line of its code keeps its indentation and a whitespace-only line
    becomes empty (code has blank lines) instead of going."""
    out: list[str] = []
    loose: list[int] = []  # lines with blanks around them (indices into out), not table rows
    lines = text.split("\n")
    last = len(lines) - 1
    row = False  # the line before was a table row
    for i, line in enumerate(lines):
        s = line.strip()
        was_row, row = row, False
        if line.startswith("| ") and (line.endswith(" | ") or (i == last and s.endswith(" |"))):
            cells = s[2:-2].split(" | ") if len(s) > 3 else [""]
            line = "\t".join(c.strip().replace("\\|", "|") for c in cells)
            row = True
        elif was_row and _TABLE_RULE.match(line):
            row = True
            continue
        elif s in _UI_LINES:
            continue
        elif s.endswith(("¶", "§")):
            line = _PERMALINK_TAIL.sub("", line)
            s = line.strip()
        if not row and len(s) != len(line):
            loose.append(len(out))
        out.append(line)
    if not loose:
        return "\n".join(out)
    if _CODE_TAG.search(html):
        code: set[str] | None = None  # read only where a line with text has blanks around it
        for k in loose:
            line = out[k]
            s = line.strip()
            if not s:
                out[k] = ""
                continue
            if _LIST_INDENT.match(line):
                out[k] = line.rstrip()
                continue
            if code is None:
                code = _code_lines(html)
            if s not in code:
                out[k] = s
        return "\n".join(out)
    drop = set()
    for k in loose:
        line = out[k]
        s = line.strip()
        if not s:
            drop.add(k)
        elif _LIST_INDENT.match(line):
            out[k] = line.rstrip()
        else:
            out[k] = s
    return "\n".join(x for k, x in enumerate(out) if k not in drop)
