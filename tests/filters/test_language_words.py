"""Word-based filters split words with the document's language's segmenter (meta.language, or
a stage's ``language``), on real text; the results are keyed on the segmenters' versions; and
for space-delimited languages nothing changed."""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import sys
from pathlib import Path

import orjson

from curator.base.document import Document
from curator.core.registry import resolve

HERE = Path(__file__).parent
PARALLEL = HERE / "data" / "parallel_messages.jsonl"
SEGMENTED = HERE.parent / "text" / "data" / "segmenter_messages.jsonl"
GOLDEN = HERE / "data" / "space_language_signals.json"
SPACE_LANGS = ("en", "de", "fr", "es", "ru")
PRESETS = ("gopher_quality", "gopher_repetition", "fineweb_quality", "nemo_english")
RULES = (
    "word_count_filter",
    "mean_word_length_filter",
    "symbol_word_ratio_filter",
    "alpha_words_filter",
    "stop_words_filter",
    "newline_ratio_filter",
    "top_ngram_filter",
    "dup_ngram_filter",
)


def _rows(path: Path) -> list[dict[str, str]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def _space_texts() -> dict[str, list[str]]:
    """Real text of space-delimited languages: each message, and all of a language's
    messages as one document (long enough for the n-gram rules)."""
    out: dict[str, list[str]] = {lang: [r[lang] for r in _rows(PARALLEL)] for lang in SPACE_LANGS}
    out["en"] += [r["en"] for r in _rows(SEGMENTED)]
    for lang in SPACE_LANGS:
        out[lang].append("\n\n".join(out[lang]))
    return out


def space_signals() -> dict[str, str]:
    """A digest per (language, text, with or without meta.language) of every word-based
    preset's signals (annotate mode), every word rule's verdict and c4_quality's rewrite:
    what ``tests/filters/data/space_language_signals.json`` recorded with the code before
    per-language words (``python tests/filters/test_language_words.py`` prints it)."""
    presets = [resolve(p).from_params({"mode": "annotate"}, id=p) for p in PRESETS]
    rules = [resolve(r).from_params({}, id=r) for r in RULES]
    c4 = resolve("c4_quality").from_params({}, id="c4_quality")
    c4_words = "words_of" in inspect.signature(c4.clean).parameters
    out = {}
    for lang, texts in _space_texts().items():
        for i, text in enumerate(texts):
            for meta in ({}, {"language": lang}):
                seen = []
                for st in presets:
                    doc = Document(f"{lang}{i}", text, dict(meta))
                    st.check(doc)
                    seen.append(doc.meta)
                seen.append([r.check(Document("d", text, dict(meta))) for r in rules])
                seen.append(
                    c4.clean(text, None, meta.get("language")) if c4_words else c4.clean(text)
                )
                key = f"{lang}:{i}:{'meta' if meta else 'none'}"
                out[key] = hashlib.sha256(
                    orjson.dumps(seen, option=orjson.OPT_SORT_KEYS)
                ).hexdigest()[:16]
    return out


def test_space_delimited_languages_are_judged_as_before() -> None:
    want = json.loads(GOLDEN.read_text())
    got = space_signals()
    assert len(got) == len(want) > 500
    assert [k for k in want if got.get(k) != want[k]] == []


def _zh(text: str, meta_lang: str | None = "zh") -> Document:
    return Document("d", text, {"language": meta_lang} if meta_lang else {})


def test_word_count_counts_chinese_words_by_the_documents_language() -> None:
    st = resolve("word_count_filter").from_params({"min_words": 5}, id="w")
    assert st.check(_zh("我爱北京天安门")) == "word_count_filter"  # 4 words
    assert st.check(_zh("我爱北京天安门", None)) is None  # no language: 7 characters
    forced = resolve("word_count_filter").from_params({"min_words": 5, "language": "zh"}, id="w")
    assert forced.check(_zh("我爱北京天安门", None)) == "word_count_filter"
    assert forced.check(_zh("我爱北京天安门", "en")) == "word_count_filter"
    # a document language_id labelled in another field
    other = resolve("word_count_filter").from_params(
        {"min_words": 5, "language_field": "lang"}, id="w"
    )
    assert other.check(Document("d", "我爱北京天安门", {"lang": "zh"})) == "word_count_filter"


def test_presets_signals_follow_the_segmenter_on_real_text() -> None:
    from curator.text.words import split_words

    st = resolve("gopher_quality").from_params({"mode": "annotate"}, id="gq")
    rep = resolve("gopher_repetition").from_params({"mode": "annotate"}, id="gr")
    for row in _rows(SEGMENTED):
        for lang in ("zh", "ja", "ko", "th"):
            text = row[lang]
            words = [w for w in split_words(text, lang) if re.search(r"\w", w)]
            doc = Document("d", text, {"language": lang})
            st.check(doc)
            assert doc.meta["signals"]["gopher_quality:word_count"] == len(words), (lang, text)
            mean = sum(map(len, words)) / len(words)
            assert doc.meta["signals"]["gopher_quality:mean_word_length"] == round(mean, 4)
            # the same text without its language: characters (Chinese, Japanese, Thai)
            plain = Document("d", text, {})
            st.check(plain)
            if lang != "ko":
                assert plain.meta["signals"]["gopher_quality:word_count"] > len(words)
            rep.check(doc)
            assert "gopher_repetition:top_2gram" in doc.meta["signals"]


def test_c4_counts_words_per_line_with_the_segmenter() -> None:
    c4 = resolve("c4_quality").from_params(
        {"min_num_sentences": -1, "filter_no_terminal_punct": False, "min_words_per_line": 5},
        id="c4",
    )
    text = "我爱北京天安门\n今天天气很好，我们去公园散步吧"
    # whitespace: each line is one word, both dropped; jieba: 4 and 9 words
    assert c4.clean(text, None, "zh") == ("今天天气很好，我们去公园散步吧", "")
    assert c4.clean(text)[0] == ""
    assert c4.clean(text, None, "en")[0] == ""


def _dist(tmp: Path, name: str, version: str) -> Path:
    """A folder holding an installed distribution's metadata (what importlib.metadata reads),
    to put first on the path: as if ``name`` ``version`` were installed."""
    info = tmp / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return tmp


def test_results_are_keyed_on_the_segmenters_version(tmp_path: Path, monkeypatch) -> None:
    from curator.core import pipeline

    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: in.jsonl}\n"
        "  - fix_unicode: {}\n  - word_count_filter: {min_words: 1}\n"
        "  - gopher_quality: {}\n  - c4_quality: {}\n"
    )
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "x"}\n')
    monkeypatch.chdir(tmp_path)

    def fps() -> dict[str, str]:
        return {n.id: n.fingerprint for n in pipeline.load("p.yaml").nodes}

    before = fps()
    monkeypatch.syspath_prepend(str(_dist(tmp_path / "site", "jieba", "99.0")))
    import importlib.metadata

    assert importlib.metadata.version("jieba") == "99.0"
    after = fps()
    assert [k for k in before if before[k] != after[k]] == [
        "word_count_filter",
        "gopher_quality",
        "c4_quality",
    ]
    node = {n.id: n for n in pipeline.load("p.yaml").nodes}["word_count_filter"]
    assert node.identity["code"]["modules"]["dist:jieba"] == "99.0"
    # what curator status and the run log say
    from curator.core.identity import explain

    monkeypatch.syspath_prepend(str(_dist(tmp_path / "site2", "jieba", "98.0")))
    again = {n.id: n for n in pipeline.load("p.yaml").nodes}["word_count_filter"]
    assert explain(node.identity, again.identity) == ["installed jieba changed (99.0 -> 98.0)"]


def test_a_missing_segmenter_stops_the_run_with_one_line(tmp_path: Path) -> None:
    from tests.helpers import cli_env, run_cli

    # failure injection: a jieba that cannot be imported, first on the path
    block = tmp_path / "block" / "jieba"
    block.mkdir(parents=True)
    (block / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'jieba'\", name='jieba')\n"
    )
    (tmp_path / "in.jsonl").write_text(
        json.dumps({"id": "a", "text": "我爱北京天安门", "language": "zh"}) + "\n"
    )
    (tmp_path / "p.yaml").write_text(
        "name: t\nwork_dir: w\nstages:\n  - read_jsonl: {paths: in.jsonl}\n"
        "  - word_count_filter: {min_words: 1}\n  - write_jsonl: {path: out}\n"
    )
    env = cli_env()
    env["PYTHONPATH"] = f"{block.parent}:{env['PYTHONPATH']}"
    import subprocess

    p = subprocess.run(
        [sys.executable, "-m", "curator", "run", "p.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode != 0
    last = [ln for ln in p.stderr.splitlines() if ln.strip()][-1]
    assert "language 'zh'" in last and "pip install jieba" in last, p.stderr
    assert "Traceback" not in p.stderr
    # with jieba there, the same run passes
    assert run_cli("run", "p.yaml", cwd=tmp_path).returncode == 0


def test_dask_workers_and_mpi_ranks_split_words_as_local(tmp_path: Path) -> None:
    """One YAML on the local executor, a Dask cluster of two workers and ``curator run``
    under ``mpiexec -n 2``: the segmenters load in the worker processes, the removals and
    every signal are the same, and they are the segmenters' (not the characters' count a
    missing one would give). Korean is left out only for time: Kiwi takes ~10 s to load in
    each process."""
    from curator.core import pipeline
    from curator.core.executors import make_executor
    from curator.core.runner import Runner
    from curator.storage.shards import read_records
    from tests.dedup.helpers_dedup import rejected, write_pipeline
    from tests.filters.helpers_filters import write_jsonl
    from tests.helpers import run_cli

    docs = [
        {"id": f"{lang}{i}", "text": row[lang], "language": lang}
        for i, row in enumerate(_rows(SEGMENTED))
        for lang in ("zh", "ja", "th", "en")
    ]
    for k in range(3):
        write_jsonl(tmp_path / "in" / f"part{k}.jsonl", docs[k::3])
    stages = (
        "  - word_count_filter: {min_words: 14}\n"
        "  - gopher_quality: {mode: annotate, languages: fineweb2}\n"
        "  - gopher_repetition: {mode: annotate}\n"
        "  - c4_quality: {min_num_sentences: -1, filter_no_terminal_punct: false,"
        " min_words_per_line: 3}\n"
    )
    results = {}
    for name, executor in (
        ("local", "{type: local}"),
        ("dask", "{type: dask, workers: 2}"),
        ("mpi", "{type: mpi}"),
    ):
        wd = tmp_path / f"w{name}"
        y = write_pipeline(
            tmp_path / f"{name}.yaml", wd, f"{tmp_path}/in/part*.jsonl", stages, executor
        )
        if name == "mpi":
            run_cli("run", str(y), mpi=2)
        else:  # in this process (the Dask workers are processes of their own)
            pipe = pipeline.load(str(y))
            with make_executor(pipe.config.executor) as ex:
                Runner(pipe, ex).run()
        out = [
            (d["id"], d["text"], d["meta"])
            for f in sorted((wd / "stages" / "c4_quality" / "data").glob("*.jsonl.zst"))
            for d in read_records(str(f))
        ]
        results[name] = (rejected(wd, "word_count_filter"), rejected(wd, "c4_quality"), out)
    st = resolve("word_count_filter").from_params({"min_words": 14}, id="w")
    want = {
        d["id"] for d in docs if st.check(Document(d["id"], d["text"], {"language": d["language"]}))
    }
    chars = {d["id"] for d in docs if st.check(Document(d["id"], d["text"], {}))}
    removed, _, out = results["local"]
    assert set(removed) == want and want != chars  # the segmenters' words decided
    assert len(out) > 20 and all("gopher_quality:word_count" in m["signals"] for _, _, m in out)
    assert results["dask"] == results["local"]
    assert results["mpi"] == results["local"]


if __name__ == "__main__":
    print(json.dumps(space_signals(), indent=0, sort_keys=True))
