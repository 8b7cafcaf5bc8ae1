"""Text shape of the default extraction on real documentation pages (tests/extract/data/docpages,
origins in SOURCES.md there): one paragraph per line, code keeps its lines, tables as
tab-separated cells, no UI strings of documentation generators."""

from __future__ import annotations

import gzip
import os
import re

import pytest

from curator.extract.extract_html import extract_text

DATA = os.path.join(os.path.dirname(__file__), "data", "docpages")


def _page(name: str) -> str:
    with gzip.open(os.path.join(DATA, f"{name}.html.gz"), "rt", encoding="utf-8") as f:
        return f.read()


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n")]


def test_sphinx_paragraphs_are_one_line_and_code_keeps_its_lines() -> None:
    text = extract_text(_page("sphinx-python-json"))
    # the source wraps this sentence after "library" (a <code> link follows)
    assert ("json exposes an API familiar to users of the standard library marshal and "
            "pickle modules.") in _lines(text)
    assert ">>> import json\n>>> json.dumps(['foo', {'bar': ('baz', None, 1.0, 2)}])" in text
    assert "¶" not in text  # Sphinx's permalinks
    # the JSON <-> Python conversion table sits in a <dd>: one row per line, cells tab-separated
    assert "Performs the following translations in decoding by default:\nJSON\tPython\n" \
        "object\tdict\narray\tlist\n" in text
    assert _lines(text)[0] == "json — JSON encoder and decoder"


def test_mkdocs_paragraphs_joined_pre_kept() -> None:
    text = extract_text(_page("mkdocs-writing-your-docs"))
    assert ("Your documentation source should be written as regular Markdown files (see "
            "Writing with Markdown below), and placed in the documentation directory.") in text
    assert "mkdocs.yml\ndocs/\n    index.md\n" in text
    # a Markdown table shown in a code block is code: its pipes and separator row stay
    assert ("| First Header | Second Header | Third Header |\n"
            "| ------------ | ------------- | ------------ |\n") in text
    # no heading ends in its permalink sign (the page's prose mentions "¶" once, that stays)
    assert not any(line.endswith("¶") for line in _lines(text))
    assert "Skip to content" not in text


def test_doxygen_tables_tab_separated_and_more_links_dropped() -> None:
    text = extract_text(_page("doxygen-jsoncpp-streamwriter"))
    lines = _lines(text)
    assert "virtual int\twrite (Value const &root, OStream *sout)=0" in lines
    assert not any(line.startswith("|") for line in lines)  # no Markdown pipes
    assert "More..." not in text
    # the code example of the class description keeps its lines
    assert "writer->write(value, &std::cout);\n" in text


def test_rustdoc_ui_strings_dropped() -> None:
    """rustdoc's "Expand description" toggle, the "source" link, the "[−]" button and the
    version next to them were lines of their own; the module's text starts right away."""
    text = extract_text(_page("rustdoc-std-collections"))
    assert _lines(text)[:2] == ["Module std::collections", "Collection types."]
    assert "Expand description" not in text and "[−]" not in text
    assert "source" not in _lines(text)


def test_javadoc_description_kept_whole() -> None:
    """favor_precision dropped the first sentence of the description."""
    text = extract_text(_page("javadoc-inject"))
    assert "Identifies injectable constructors, methods, and fields." in text
    assert "Skip navigation links" not in text


def test_gopher_alpha_words_not_lowered_by_table_markup() -> None:
    """Gopher's rule wants >= 80% of words with a letter: table pipes are words without one,
    so a page of tables was scored as symbols."""

    page = _page("doxygen-jsoncpp-streamwriter")
    words = extract_text(page).split()
    raw_words = extract_text(page, shape=False).split()
    alpha = sum(any(c.isalpha() for c in w) for w in words) / len(words)
    raw_alpha = sum(any(c.isalpha() for c in w) for w in raw_words) / len(raw_words)
    assert "|" not in words and "|" in raw_words
    assert alpha > raw_alpha


def test_shape_off_keeps_trafilatura_output() -> None:
    raw = extract_text(_page("doxygen-jsoncpp-streamwriter"), shape=False)
    assert any(line.startswith("|") for line in _lines(raw))


def test_extract_html_stage_takes_the_options(tmp_path) -> None:
    """The stage passes trafilatura's options on; a wrong balance is a one-line YAML error."""
    import json

    from tests.acquire.helpers_acquire import read_output, run_pipeline
    from tests.extract.helpers_extract import run_extract_html

    src = str(tmp_path / "in.jsonl")
    with open(src, "w") as f:
        f.write(json.dumps({"id": "d", "text": _page("doxygen-jsoncpp-streamwriter")}) + "\n")
    out = {}
    for shape in (True, False):
        summary = run_pipeline(str(tmp_path / f"w{shape}"), [
            {"read_jsonl": {"paths": src}}, {"extract_html": {"shape": shape}, "id": "x"}])
        out[shape] = read_output(summary, "x")[0].text
    assert "virtual int\twrite (Value const &root, OStream *sout)=0" in out[True]
    assert "| virtual int | write (Value const &root, OStream *sout)=0 |" in out[False]
    r = run_extract_html(tmp_path, src, "balance: sideways")
    assert r.returncode != 0 and "balance" in r.stderr and "Traceback" not in r.stderr


def test_long_blank_runs_join_in_linear_time() -> None:
    """Joining hard-wrapped lines must not backtrack over blank runs (a regex such as
    ``[ \\t]*\\n\\s*`` took a second for 20,000 spaces, quadratically more for longer runs)."""
    body = "word " * 60 + "a" + " " * 300_000 + "b\nc"
    html = f"<html><body><article><p>{body}</p></article></body></html>"
    text = extract_text(html, timeout_s=5.0)
    assert text.startswith("word word") and text.endswith("b c")


def test_control_character_reference_in_a_wrapped_paragraph() -> None:
    # CleanEval page 345 writes "&#26;" (U+001A) in a hard-wrapped paragraph: lxml parses it
    # but refuses it when the joined text is set back, which failed the whole page.
    words = " ".join(f"word{i}" for i in range(60))
    html = (f"<html><body><article><h1>Title</h1><p>{words}\nsecond line &#26;\nthird line"
            f" with more words {words}.</p></article></body></html>")
    text = extract_text(html)
    assert "second line third line with more words" in text
    assert "\x1a" not in text


@pytest.mark.parametrize("box", ['<a class="headerlink" href="#t">¶</a>',
                                 '<span class="userinfo">Posts: 5</span>'])
@pytest.mark.parametrize("where", ["before", "after"])
def test_control_character_reference_next_to_a_dropped_element(box: str, where: str) -> None:
    # Dropping a documentation link or an author box joins its tail to the text before it;
    # with "&#26;" on either side lxml refused the joined text and the whole page failed.
    words = " ".join(f"word{i}" for i in range(60))
    mark = "&#26;"
    head = f"Title {mark}" if where == "before" else "Title"
    tail = f"{mark} tail" if where == "after" else " tail"
    html = (f"<html><body><article><h1>{head}{box}{tail}</h1><p>{words} second line.</p>"
            f"</article></body></html>")
    text = extract_text(html)
    assert text.startswith("Title") and "tail" in text.split("\n")[0]
    assert "\x1a" not in text and "Posts" not in text and "¶" not in text


def _bench() -> object:
    from bench import gold_set

    return gold_set


@pytest.mark.parametrize("page_id", [
    "harvest/forum.worldofplayers.de.forum.threads.1548322",  # trafilatura's cascade: 915
    "wcxb/2968",  # a news index: 647 whitespace-only lines and indented teasers before
])
def test_the_sources_blanks_around_lines_are_gone(page_id: str) -> None:
    """trafilatura's cascade (readability/jusText) keeps the HTML's indentation and its
    whitespace-only lines between blocks; on a page without code they are not text."""
    bench = _bench()
    html = next(p.html for p in bench.load_gold("all")  # type: ignore[attr-defined]
                if p.id.startswith(page_id))
    raw, text = extract_text(html, shape=False), extract_text(html)
    assert sum(1 for line in raw.split("\n") if line and not line.strip()) > 100
    # every line is text without blanks around it; a nested list item keeps its indent
    assert all(line and (line == line.strip() or re.match(r" +-( |$)", line))
               for line in text.split("\n")), text[:500]
    assert bench.tokens(text) == bench.tokens(raw)  # type: ignore[attr-defined]


def test_code_keeps_its_indentation_and_nested_lists_theirs() -> None:
    page = ("<html><body><article><h1>Notes</h1><p>Some words about the loop below, long "
            "enough to be the main text of this small page for the extractor.</p>\n    "
            "<pre>for x in xs:\n    print(x)\n    \n</pre>\n    <p>More words after the code "
            "block, as a second paragraph of prose.</p></article></body></html>")
    text = extract_text(page)
    assert "for x in xs:\n    print(x)\n" in text  # code: indentation kept
    assert not any(line and not line.strip() for line in text.split("\n"))
    lists = ("<html><body><article><p>" + "Prose sentence here. " * 12 + "</p><ul><li>Top item"
             "<ul><li>Nested item one</li><li>Nested item two</li></ul></li></ul>"
             "</article></body></html>")
    lines = extract_text(lists).split("\n")
    assert "- Top item" in lines and "  - Nested item one" in lines, lines


def test_on_a_page_with_code_only_the_codes_lines_keep_their_indentation() -> None:
    """Python's C-API docs (code blocks among prose) and Mercurial's guide, where the source
    indents its prose by 28 spaces: prose lines lose the blanks, code lines keep them."""
    bench = _bench()
    pages = {p.id: p.html for p in bench.load_gold("all")  # type: ignore[attr-defined]
             if p.id in ("pydocs/c-api/init_config.html", "readability/mercurial")}
    from curator.extract.shape import _code_lines

    for html in pages.values():
        text = extract_text(html)
        code = _code_lines(html)
        edged = [line for line in text.split("\n") if line != line.strip()]
        assert edged and all(line.strip() in code or re.match(r" +-( |$)", line)
                             for line in edged), edged[:5]
        assert bench.tokens(text) == bench.tokens(  # type: ignore[attr-defined]
            extract_text(html, shape=False))
    lines = extract_text(pages["pydocs/c-api/init_config.html"]).split("\n")
    assert "    PyStatus status;" in lines
    mercurial = extract_text(pages["readability/mercurial"])
    assert any(line.startswith("We’ll need two clones") for line in mercurial.split("\n"))


@pytest.mark.parametrize("junk", ["<code>x" * 40_000, "<pre" * 100_000,
                                  "<pre>a</pre>" * 20_000 + "<code>" * 40_000])
def test_code_lines_are_read_in_linear_time(junk: str) -> None:
    """Unclosed code tags by the ten thousand, or open tags without ">": an end-tag search
    over the rest of the page for each of them is quadratic (1.8 s for 40,000 unclosed
    ``<code>``, a hundred times that for ten times as many); the page still extracts."""
    from curator.extract.shape import _code_lines

    html = f"<html><body><pre>  kept\n</pre>{junk}</body></html>"
    assert "kept" in _code_lines(html)
    prose = "<p>" + "Some prose words here. " * 40 + "</p>\n        "
    extract_text(f"<html><body><article>{prose}<pre>  kept\n</pre>{prose}</article>{junk}"
                 "</body></html>", timeout_s=20.0)
