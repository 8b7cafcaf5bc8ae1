"""read_warc's ``languages``: a language guess on resiliparse's quick text skips the full
extraction of pages that language_id would drop afterwards, and changes nothing else."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
import yaml
import zstandard

from curator.extract import extract_html as E
from curator.extract import html_repair
from curator.filters.language_id import other_language, predict_languages
from tests.acquire.helpers_acquire import (
    read_output,
    read_side,
    run_pipeline,
    stage_stats,
    warc_response,
    write_warc,
)
from tests.helpers import run_cli

GOLD = Path(__file__).resolve().parents[2] / "bench" / "gold" / "pages.jsonl.zst"


def _gold() -> list[dict]:
    with open(GOLD, "rb") as f:
        return [json.loads(line) for line in
                io.TextIOWrapper(zstandard.ZstdDecompressor().stream_reader(f), "utf-8")]


def _german(rows: list[dict]) -> list[dict]:
    """Three German gold pages that do not declare English (as 6 of the 95 non-English gold
    pages do: their site's template says ``<html lang="en">``)."""
    return [r for r in rows if r["lang"] == "de" and not re.search(
        r"<html\b[^>]*\slang=[\"']?en", r["html"][:8192], re.I)][:3]


def test_the_guess_skips_only_pages_language_id_drops() -> None:
    """On the 630 real gold pages (24 languages): every page the guess skips for ``[en]`` is
    one that language_id (min_score 0.65) drops after the full extraction, and the guess
    skips most non-English pages and no English one."""
    skipped: dict[str, str] = {}
    rows = _gold()
    for r in rows:
        quick, _ = E._yardstick(html_repair.close_noscript_iframes(r["html"]))
        lang = other_language(quick, ["en"], 0.05)
        if lang is not None:
            skipped[r["id"]] = r["lang"]
    full = [E.extract_text(r["html"]) for r in rows if r["id"] in skipped]
    langs, scores = predict_languages(full)
    kept_by_language_id = [(lg, s) for lg, s in zip(langs, scores) if lg == "en" and s >= 0.65]
    assert kept_by_language_id == []
    assert "en" not in skipped.values()
    non_english = sum(r["lang"] != "en" for r in rows)
    assert len(skipped) > non_english / 2


def test_read_warc_languages_drops_the_same_pages_without_extracting_them(tmp_path) -> None:
    rows = _gold()
    pick = _german(rows) + [r for r in rows if r["lang"] == "en"][:4]
    members = [warc_response(r["url"], r["html"].encode("utf-8")) for r in pick]
    path = write_warc(str(tmp_path / "in" / "crawl.warc.gz"), members)

    def run(name: str, guess: dict) -> tuple[dict, str]:
        work = str(tmp_path / name)
        summary = run_pipeline(work, [
            {"read_warc": {"paths": path, **guess}, "id": "warc"},
            {"language_id": {"languages": ["en"]}, "id": "lid"}])
        return summary, work

    plain, _ = run("plain", {})
    guessed, work = run("guessed", {"languages": ["en"]})
    out = [(d.id, d.text, d.meta) for d in read_output(plain, "lid")]
    assert out == [(d.id, d.text, d.meta) for d in read_output(guessed, "lid")]
    assert len(out) == 4

    rejected = read_side(work, "rejected", "warc")
    assert sorted(r["rejected"]["reason"] for r in rejected) == ["language_guess:de"] * 3
    assert {r["meta"]["url"] for r in rejected} == {r["url"] for r in pick[:3]}
    assert all(r["text"] for r in rejected)  # the quick text it judged, for a look
    assert stage_stats(guessed, "warc")["counters"]["language_guess_skipped"] == 3
    # without the guess the German pages were extracted, then dropped by language_id
    assert "language_guess_skipped" not in stage_stats(plain, "warc")["counters"]
    assert stage_stats(plain, "lid")["counters"].get("language:de") == 3


def test_a_page_declaring_a_kept_language_is_not_guessed(tmp_path) -> None:
    """``<html lang="en-GB">`` with ``languages: [en]``: no guess, the full extraction, and
    language_id decides, so a wrong declaration costs time, never a page. The same German
    pages undeclared are skipped by the guess; the documents out are the same."""
    german = _german(_gold())

    def declared(html: str) -> str:
        html, n = re.subn(r"<html\b[^>]*>", '<html lang="en-GB">', html, count=1, flags=re.I)
        return html if n else '<html lang="en-GB">' + html

    members = [warc_response(r["url"], r["html"].encode("utf-8")) for r in german]
    members += [warc_response(r["url"] + "?declared", declared(r["html"]).encode("utf-8"))
                for r in german]
    path = write_warc(str(tmp_path / "in" / "crawl.warc.gz"), members)
    work = str(tmp_path / "w")
    summary = run_pipeline(work, [
        {"read_warc": {"paths": path, "languages": ["en"]}, "id": "warc"},
        {"language_id": {"languages": ["en"]}, "id": "lid"}])
    assert read_output(summary, "lid") == []
    guessed = {r["meta"]["url"] for r in read_side(work, "rejected", "warc")}
    assert guessed == {r["url"] for r in german}
    assert stage_stats(summary, "warc")["counters"]["language_guess_skipped"] == 3
    assert stage_stats(summary, "lid")["counters"].get("language:de") == 3  # the declared ones


def test_a_short_quick_text_is_never_judged() -> None:
    """Fewer than GUESS_MIN_WORDS words (a page resiliparse reads badly) say nothing."""
    german = "Das ist ein kurzer deutscher Satz über die Stadt."
    assert other_language(german, ["en"], 0.05) is None
    assert other_language(" ".join([german] * 6), ["en"], 0.05) == "de"
    assert other_language(" ".join([german] * 6), ["en", "de"], 0.05) is None
    # a Japanese text has few spaces: its characters are its words (curator.text.words)
    japanese = "東京は日本の首都であり、世界で最も人口の多い都市圏の一つとして知られています。"
    assert len((japanese * 2).split()) == 1
    assert other_language(japanese, ["en"], 0.05) is None  # 36 characters
    assert other_language(japanese * 2, ["en"], 0.05) == "ja"



@pytest.mark.parametrize("stage, entry", [
    ("read_warc", {"read_warc": {"paths": "{warc}", "languages": ["en", "english"]}}),
    ("common_crawl", {"common_crawl": {"snapshot": "CC-MAIN-2024-10", "languages": ["english"]}}),
    ("language_id", {"language_id": {"languages": ["english"]}}),
])
def test_a_language_the_model_does_not_know_is_a_one_line_error(tmp_path, stage, entry) -> None:
    """'english' for 'en' would turn down every page (and language_id would drop them all)."""
    warc = write_warc(str(tmp_path / "a.warc.gz"), [warc_response("https://a.example/",
                                                                   b"<p>hi</p>")])
    stages = [{"read_warc": {"paths": warc}}] if stage == "language_id" else []
    text = yaml.safe_dump({"name": "t", "work_dir": str(tmp_path / "w"),
                           "stages": [*stages, entry]}).replace("{warc}", warc)
    (tmp_path / "p.yaml").write_text(text)
    p = run_cli("run", str(tmp_path / "p.yaml"), check=False)
    assert p.returncode == 2
    # with the file, YAML line and key path, as every parameter error
    assert re.fullmatch(
        rf"curator: error: {re.escape(str(tmp_path / 'p.yaml'))}:\d+: stages\[{len(stages)}\]"
        rf"\.{stage}\.languages: 'english' is not a language of the model lid\.176\.ftz "
        r"\(ISO codes such as en, de, zh\)", p.stderr.strip().splitlines()[-1])
