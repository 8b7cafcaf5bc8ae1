"""Built-in word and domain lists (packages of the ``wordlists`` extra) on real text: the
translated messages of Debian's essential tools (gettext catalogues of coreutils, bash, dpkg,
apt, grep... in 12 languages) and the URLs in the Python standard library's source."""

from __future__ import annotations

import functools
import gettext
import glob
import os
import random
import re
import sysconfig

import pytest

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.extract.url_blocklist import UrlBlocklist, url_host
from curator.filters import wordlists
from curator.filters.bad_words_filter import BadWords
from tests.filters.helpers_filters import run_pipeline, write_jsonl
from tests.helpers import stage_error

#: language -> locale folder; catalogues of Debian's essential/required packages only
LOCALES = {"de": "de", "fr": "fr", "es": "es", "it": "it", "pt": "pt_BR", "nl": "nl",
           "pl": "pl", "ru": "ru", "sv": "sv", "cs": "cs", "fi": "fi", "ja": "ja",
           "ko": "ko", "zh": "zh_CN"}
CATALOGUES = ("coreutils", "bash", "dpkg", "apt", "grep", "findutils", "diffutils", "tar",
              "sed", "gettext-runtime", "util-linux", "shadow", "Linux-PAM", "libc")


@functools.cache
def messages(lang: str) -> list[str]:
    out: list[str] = []
    for cat in CATALOGUES:
        for f in glob.glob(f"/usr/share/locale/{LOCALES[lang]}/LC_MESSAGES/{cat}.mo"):
            with open(f, "rb") as fh:
                tr = gettext.GNUTranslations(fh)
            out += [v for k, v in tr._catalog.items()
                    if isinstance(k, str) and k and isinstance(v, str) and len(v) >= 25]
    return random.Random(0).sample(out, min(len(out), 2500))


def test_built_in_lists_cover_24_languages() -> None:
    sizes = {lang: len(wordlists.builtin_words(lang)) for lang in wordlists.GLIN_LANGUAGES}
    assert len(sizes) == 24 and min(sizes.values()) >= 10, sizes
    assert all(any(c.isalpha() for c in w) for w in wordlists.builtin_words("tr"))
    with pytest.raises(ConfigError, match="no built-in list"):
        wordlists.builtin_words("xx")


def test_few_hits_on_clean_real_text_in_12_languages() -> None:
    """Error and help messages of the base system's tools are clean text: at most 1% of them
    may contain a listed word (measured: 0 in most languages; see docs/filters.md)."""
    bw = BadWords.from_params({"builtin": True})
    tested = 0
    for lang in LOCALES:
        msgs = messages(lang)
        if len(msgs) < 300:
            continue
        tested += 1
        hits = sum(bw.count(Document("m", t, {"language": lang}))[1] > 0 for t in msgs)
        assert hits <= 0.01 * len(msgs), (lang, hits, len(msgs))
    assert tested >= 10


def test_planted_words_are_found_per_language() -> None:
    """A listed word put into a real message of its language is counted, as a whole word in
    space-delimited languages and inside running text in Chinese/Japanese; the same word in a
    document of another language is not looked for in that language's list."""
    rng = random.Random(3)
    bw = BadWords.from_params({"builtin": True, "default_language": None})
    for lang in LOCALES:
        msgs = messages(lang)
        if len(msgs) < 300:
            continue
        clean = [m for m in msgs if bw.count(Document("m", m, {"language": lang}))[1] == 0]
        words = [w for w in wordlists.builtin_words(lang)
                 if len(w) > 1 and w not in bw.common.single]
        for w in rng.sample(words, min(5, len(words))):
            base = rng.choice(clean)
            # (a katakana word must stand alone: ゴールデンシャワー inside a longer katakana run is
            # another word)
            glue = "" if lang == "zh" or (lang == "ja" and not re.fullmatch(
                "[\u30a0-\u30ff]+", w)) else " "
            cut = base.index(" ") if " " in base else len(base) // 2
            text = base[:cut] + glue + w + glue + base[cut:]
            lang_used, n = bw.count(Document("m", text, {"language": lang}))
            assert lang_used == lang and n >= 1, (lang, w, text)


def test_word_boundaries_and_allow_list() -> None:
    bw = BadWords.from_params({"builtin": True, "languages": ["en", "de"]})
    en = {"language": "en"}
    assert bw.count(Document("a", "The class passed the assessment.", en))[1] == 0
    assert bw.count(Document("a", "What an ass.", en))[1] == 1
    # a German document is matched against the German list (plus nothing else)
    assert bw.count(Document("a", "So ein Arschloch!", {"language": "de"})) == ("de", 1)
    assert bw.count(Document("a", "So ein Arschloch!", en)) == ("en", 0)
    # unknown language -> the default (English) list
    assert bw.count(Document("a", "What an ass.", {"language": "sw"})) == ("en", 1)
    bw = BadWords.from_params({"builtin": True, "languages": ["en"], "allow": ["ass"]})
    assert bw.count(Document("a", "What an ass.", en))[1] == 0
    assert "stages[1].bad_words_filter" in (e := stage_error("bad_words_filter",
                                                            {"languages": ["en"]}))
    assert "languages selects built-in lists: set builtin: true" in e
    with pytest.raises(ConfigError, match="default_language"):
        BadWords.from_params({"builtin": True, "languages": ["de"]})


def test_own_lists_per_language(tmp_path) -> None:
    (tmp_path / "xx.txt").write_text("blorf\nzorp quux\n")
    bw = BadWords.from_params({"paths": {"xx": str(tmp_path / "xx.txt")},
                               "default_language": None})
    assert bw.count(Document("a", "a blorf and zorp quux", {"language": "xx"})) == ("xx", 2)
    assert bw.count(Document("a", "a blorf", {"language": "en"})) == ("*", 0)


def test_pipeline_language_id_then_bad_words(tmp_path) -> None:
    """Real messages in 6 languages, language found by the bundled fastText model, bad words
    counted per language in the report; only the documents with a planted word go."""
    recs = []
    rng = random.Random(5)
    plant = {"de": "arschloch", "fr": "salope", "es": "puta", "it": "stronzo",
             "ru": "говно", "pl": "kurwa"}
    for lang in plant:
        msgs = messages(lang)
        assert len(msgs) >= 50, lang
        for i, m in enumerate(rng.sample(msgs, 20)):
            body = " ".join(rng.sample(msgs, 6))  # long enough for a confident language id
            text = f"{m} {body}"
            if i == 0:
                text = f"{m} {plant[lang]} {body}"
            recs.append({"id": f"{lang}-{i}", "text": text})
    data = write_jsonl(tmp_path / "in.jsonl", recs)
    run = run_pipeline(tmp_path, [
        {"read_jsonl": {"paths": str(data)}},
        {"language_id": {"label_only": True}},
        {"bad_words_filter": {"builtin": True}, "id": "bw"},
    ])
    gone = {r["id"]: r["rejected"] for r in run.rejected("bw")}
    assert {f"{lang}-0" for lang in plant} <= set(gone)
    assert len(gone) <= len(plant) + 2  # at most a couple of real hits in the messages
    counters = run.stage("bw")["counters"]
    for lang in plant:
        assert counters.get(f"bad_words:{lang}", 0) >= 1, (lang, counters)
    assert gone["de-0"]["language"] == "de"


# -- URL domain list ---------------------------------------------------------------------

STDLIB = sysconfig.get_paths()["stdlib"]
_URL = re.compile(r"https?://[A-Za-z0-9.\-]+(?::\d+)?(?:/[^\s'\")>\]]*)?")


@functools.cache
def blocklist() -> UrlBlocklist:
    return UrlBlocklist.from_params({"builtin": True})


@pytest.mark.slow
def test_few_real_urls_of_the_python_stdlib_are_blocked() -> None:
    """~2,000 distinct URLs in the standard library (docs, RFCs, bug trackers, test data).
    Measured: two hosts blocked, www.sol.no (a Norwegian portal the package lists) and
    www.nasty.com (a cookie test's made-up site)."""
    urls = set()
    for f in glob.glob(os.path.join(STDLIB, "**", "*.py"), recursive=True):
        if "site-packages" in f:
            continue
        with open(f, encoding="utf-8", errors="replace") as fh:
            urls.update(_URL.findall(fh.read()))
    assert len(urls) > 500
    blocked = [u for u in urls if blocklist().check_url(u)]
    hosts = {url_host(u) for u in urls}
    assert len({url_host(u) for u in blocked}) <= 2 and len(hosts) > 200, blocked


@pytest.mark.slow
def test_listed_domains_and_subdomains_are_blocked_platforms_are_not() -> None:
    path = wordlists.builtin_domain_file()
    with open(path, encoding="utf-8") as f:
        listed = [ln.strip() for _, ln in zip(range(200_000), f) if ln.strip()]
    rng = random.Random(2)
    sample = [d for d in rng.sample(listed, 200)
              if not d.startswith(("blogspot.", "x.com"))]
    for d in sample:
        assert blocklist().check_url(f"https://{d}/index.html") == "url_blocked_builtin", d
        assert blocklist().check_url(f"http://www.{d}:8080/a?b=1") == "url_blocked_builtin", d
    # whole platforms are listed by the package but dropped: a blog or a post is not blocked
    assert blocklist().check_url("https://someblog.blogspot.com/2020/01/post.html") is None
    assert blocklist().check_url("https://x.com/python/status/1") is None
    assert blocklist().check_url("https://docs.python.org/3/") is None
    strict = UrlBlocklist.from_params({"builtin": True, "allow_domains": []})
    assert strict.check_url("https://x.com/python/status/1") == "url_blocked_builtin"
