"""line_dedup and sentence_span_dedup on real text (the bundled Wikipedia sample) against
straightforward reference implementations, and identical on local, Dask and MPI."""

from __future__ import annotations

import itertools
import random
from collections import Counter
from pathlib import Path

import orjson
import pytest
from datatrove.utils.text import simplify_text

from curator.base.errors import ConfigError
from curator.dedup.line_dedup import LineDedup
from curator.dedup.sentence_span_dedup import SentenceSpanDedup
from curator.storage.shards import read_records
from curator.text import split_sentences
from tests.dedup.helpers_dedup import rejected, wiki_paragraphs, write_pipeline
from tests.helpers import run_cli

FOOTERS = ["This article is licensed under the Creative Commons Attribution-ShareAlike 3.0.",
           "Retrieved from the English Wikipedia, revision of 1 May 2016.",
           "Share this page: Facebook | Twitter | E-mail"]


def _variant(line: str, rng: random.Random) -> str:
    """The same footer as another site template prints it (case, punctuation, numbers)."""
    return rng.choice([line, line.upper(), line.replace(",", "").replace(".", "!"),
                       line.replace("3.0", "4.0").replace("2016", "2017"), f"  {line} "])


def make_corpus(path: Path, n_docs: int = 240, shards: int = 3, seed: int = 0) -> list[dict]:
    """Real paragraphs (one per line, 3 per document) plus boilerplate footers in most documents
    and, in some, a run of 3-4 sentences copied from an earlier document."""
    rng = random.Random(seed)
    paras = wiki_paragraphs()[:n_docs * 3]
    docs = []
    for i in range(n_docs):
        lines = paras[3 * i:3 * i + 3]
        if rng.random() < 0.7:
            lines += [_variant(f, rng) for f in rng.sample(FOOTERS, rng.randint(1, 3))]
        if i > 10 and rng.random() < 0.25:  # a quoted passage
            src = split_sentences(docs[rng.randrange(i)]["text"].split("\n")[0])
            if len(src) >= 4:
                k = rng.randrange(len(src) - 3)
                lines.insert(1, " ".join(src[k:k + rng.choice([3, 4])]))
        docs.append({"id": f"d{i}", "text": "\n".join(lines)})
    docs.append({"id": "only-footer", "text": FOOTERS[0]})  # emptied by line_dedup
    path.mkdir(parents=True, exist_ok=True)
    n = -(-len(docs) // shards)
    for k in range(shards):  # contiguous: shard order = input order
        with open(path / f"part{k}.jsonl", "wb") as f:
            f.writelines(orjson.dumps(d) + b"\n" for d in docs[k * n:(k + 1) * n])
    return docs


def ref_line_dedup(docs: list[dict], k: int, keep_first: bool) -> dict[str, str]:
    """Reference: id -> text after line dedup ('' = emptied), with datatrove's normaliser."""
    key = [[simplify_text(x) for x in d["text"].split("\n")] for d in docs]
    count = Counter(x for ks in key for x in ks if x)
    seen: set[str] = set()
    out = {}
    for d, ks in zip(docs, key):
        kept = []
        for line, x in zip(d["text"].split("\n"), ks):
            drop = bool(x) and count[x] > k and (not keep_first or x in seen)
            seen.add(x)
            if not drop:
                kept.append(line)
        out[d["id"]] = "\n".join(kept)
    return out


def ref_span_dedup(docs: list[dict], span: int = 3) -> dict[str, str]:
    """Reference C4 dedup: sentences of any span of ``span`` seen earlier are cut."""
    seen: set[str] = set()
    out = {}
    for d in docs:
        text = d["text"]
        starts, pos = [], 0
        for s in split_sentences(text):
            pos = text.index(s, pos)
            starts.append(pos)
            pos += len(s)
        bounds = starts + [len(text)]
        sents = [text[a:b] for a, b in itertools.pairwise(bounds)]
        drop: set[int] = set()
        for j in range(len(sents) - span + 1):
            x = simplify_text(" ".join(sents[j:j + span]))
            if x in seen:
                drop.update(range(j, j + span))
            seen.add(x)
        if drop:
            text = (text[:starts[0]] + "".join(s for i, s in enumerate(sents)
                                               if i not in drop)).rstrip()
        out[d["id"]] = text
    return out


def _output(work: Path, stage: str) -> dict[str, str]:
    return {r["id"]: r["text"] for f in sorted((work / "stages" / stage / "data").glob("*.zst"))
            for r in read_records(str(f))}


def _report_counters(work: Path, stage: str) -> dict[str, int]:
    rep = orjson.loads((work / "report.json").read_bytes())
    return next(s for s in rep["stages"] if s["id"] == stage)["counters"]


@pytest.mark.parametrize("keep_first", [False, True])
def test_line_dedup_matches_reference(tmp_path, keep_first):
    docs = make_corpus(tmp_path / "in")
    stage = (f"  - line_dedup: {{keep_first: {str(keep_first).lower()}, partitions: 3}}\n")
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/in/part*.jsonl", stage)
    y.write_text(y.read_text().replace("report: false", "report: true"))
    r = run_cli("run", str(y), check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    ref = ref_line_dedup(docs, 1, keep_first)
    got = _output(tmp_path / "w", "line_dedup")
    assert got == {i: t for i, t in ref.items() if t.strip()}
    gone = rejected(tmp_path / "w", "line_dedup")
    assert set(gone) == {i for i, t in ref.items() if not t.strip()}
    assert all(v["reason"] == "all_lines_duplicate" for v in gone.values())
    if not keep_first:
        assert "only-footer" in gone  # its only line is boilerplate
    c = _report_counters(tmp_path / "w", "line_dedup")
    changed = [d for d in docs if ref[d["id"]] != d["text"] and ref[d["id"]].strip()]
    assert c["documents_changed"] == len(changed) > 100
    assert c.get("documents_emptied", 0) == len(gone)
    assert c["lines_removed"] == sum(len(d["text"].split("\n")) - len(ref[d["id"]].split("\n"))
                                     for d in docs if ref[d["id"]].strip()) + sum(
        len(d["text"].split("\n")) for d in docs if not ref[d["id"]].strip())
    # every footer variant is caught: case, punctuation and numbers do not count
    if not keep_first:
        assert not any(f.lower()[:20] in t.lower() for t in got.values() for f in FOOTERS)


def test_line_dedup_max_occurrences_and_basic_preset(tmp_path):
    docs = make_corpus(tmp_path / "in", n_docs=120, shards=2, seed=4)
    stage = "  - line_dedup: {max_occurrences: 5, normalize: basic}\n"
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/in/part*.jsonl", stage)
    r = run_cli("run", str(y), check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    got = _output(tmp_path / "w", "line_dedup")
    key = [[" ".join(x.split()).lower() for x in d["text"].split("\n")] for d in docs]
    count = Counter(x for ks in key for x in ks if x)
    want = {d["id"]: "\n".join(line for line, x in zip(d["text"].split("\n"), ks)
                               if not (x and count[x] > 5)) for d, ks in zip(docs, key)}
    assert got == {i: t for i, t in want.items() if t.strip()}
    # basic keeps the footer variants that differ in more than case and spacing
    assert any("!" in t.split("\n")[-1] for t in got.values())


def test_sentence_span_dedup_matches_reference(tmp_path):
    docs = make_corpus(tmp_path / "in", seed=1)
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/in/part*.jsonl",
                       "  - sentence_span_dedup: {partitions: 2}\n")
    r = run_cli("run", str(y), check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    ref = ref_span_dedup(docs)
    got = _output(tmp_path / "w", "sentence_span_dedup")
    assert got == {i: t for i, t in ref.items() if t.strip()}
    assert sum(ref[d["id"]] != d["text"] for d in docs) >= 8  # quoted passages, footers


def test_sentence_span_dedup_c4_example(tmp_path):
    """A copies nothing; B quotes 3 sentences of A with other case and quotes: only those 3
    sentences leave B."""
    clean = [p for p in wiki_paragraphs() if not any(c in p for c in "[{<|=*#")
             and len(split_sentences(p)) >= 6]
    a = " ".join(split_sentences(clean[0])[:6])
    s = split_sentences(a)
    quoted = " ".join(s[1:4]).upper().replace(",", "").replace(" ", "  ")
    first = split_sentences(clean[1])[0]
    b = f"{first} {quoted} Nothing else is copied here."
    (tmp_path / "in").mkdir()
    with open(tmp_path / "in" / "a.jsonl", "wb") as f:
        f.write(orjson.dumps({"id": "A", "text": a}) + b"\n")
        f.write(orjson.dumps({"id": "B", "text": b}) + b"\n")
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/in/a.jsonl",
                       "  - sentence_span_dedup: {}\n")
    run_cli("run", str(y))
    got = _output(tmp_path / "w", "sentence_span_dedup")
    assert got["A"] == a
    assert got["B"] == f"{first} Nothing else is copied here."


def test_subdoc_parameters_are_checked():
    with pytest.raises(ConfigError, match="max_occurrences"):
        LineDedup(max_occurrences=0)
    with pytest.raises(ConfigError, match=r"sentence_span_dedup\.normalize"):
        SentenceSpanDedup(normalize="fine")  # type: ignore[arg-type]


def test_subdoc_local_dask_mpi_identical(tmp_path):
    make_corpus(tmp_path / "in", n_docs=150, shards=4, seed=2)
    stages = ("  - line_dedup: {keep_first: true, partitions: 3}\n"
              "  - sentence_span_dedup: {partitions: 2}\n")
    inputs = f"{tmp_path}/in/part*.jsonl"
    results = {}
    for name, executor, ranks in (("local", "{type: local}", 0),
                                  ("dask", "{type: dask, workers: 2}", 0),
                                  ("mpi", "{type: mpi}", 2)):
        y = write_pipeline(tmp_path / f"{name}.yaml", tmp_path / name, inputs, stages, executor)
        r = run_cli("run", str(y), mpi=ranks, check=False)
        assert r.returncode == 0, f"{name}: {r.stderr[-2000:]}"
        w = tmp_path / name
        results[name] = (_output(w, "line_dedup"), _output(w, "sentence_span_dedup"),
                         rejected(w, "line_dedup"), rejected(w, "sentence_span_dedup"))
    assert results["local"][0] and results["local"][2]
    assert results["dask"] == results["local"]
    assert results["mpi"] == results["local"]


def _undo_after_hash(stage_dir: Path) -> None:
    """Forget everything after the ``hash`` phase except the first partition's group result."""
    import shutil

    (stage_dir / "_SUCCESS.json").unlink()
    for d in ("_done", "data", "_phases/removals", "removals"):
        shutil.rmtree(stage_dir / d)
    next(iter(sorted((stage_dir / "_phases" / "groups").glob("*.pkl")))).unlink()


def test_line_dedup_rerun_reuses_finished_phases(tmp_path):
    make_corpus(tmp_path / "in", n_docs=90, shards=3, seed=6)
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/in/part*.jsonl",
                       "  - line_dedup: {partitions: 3}\n")
    run_cli("run", str(y))
    sd = tmp_path / "w" / "stages" / "line_dedup"
    first = _output(tmp_path / "w", "line_dedup")
    hashes = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (sd / "hash").glob("*.npy")}
    _undo_after_hash(sd)
    run_cli("run", str(y))
    assert _output(tmp_path / "w", "line_dedup") == first
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in hashes} == hashes  # reused
    assert sorted((sd / "hash").glob("*.npy")) == sorted(hashes)


def test_line_dedup_corrupt_intermediate_is_one_clear_error(tmp_path):
    make_corpus(tmp_path / "in", n_docs=60, shards=2, seed=7)
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", f"{tmp_path}/in/part*.jsonl",
                       "  - line_dedup: {partitions: 2}\n")
    run_cli("run", str(y))
    sd = tmp_path / "w" / "stages" / "line_dedup"
    _undo_after_hash(sd)
    bad = sorted((sd / "hash").glob("*.r.npy"))[0]
    bad.write_bytes(bad.read_bytes()[:40])  # truncated by a disk fault
    r = run_cli("run", str(y), check=False)
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert str(bad) in last and "delete the stage folder and rerun" in last
    assert not (sd / "_SUCCESS.json").exists()


def test_example_pipeline_on_bundled_crawl(tmp_path):
    """pipelines/subdoc-dedup.yaml on the bundled Python-docs crawl: the repeated captures are
    emptied by line_dedup, navigation/footer lines leave the other pages."""
    work = tmp_path / "w"
    r = run_cli("run", str(Path(__file__).resolve().parents[2] / "pipelines" /
                            "subdoc-dedup.yaml"), "--work-dir", str(work), check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    c = _report_counters(work, "line_dedup")
    assert c["documents_emptied"] >= 5 and c["documents_changed"] > 20
    assert c["lines_removed"] == c["lines_duplicate"] > 100
    assert len(rejected(work, "line_dedup")) == c["documents_emptied"]
    assert (work / "out").exists()
