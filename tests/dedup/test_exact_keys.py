"""exact_dedup's ``key`` (text, normalised URL, a meta field) and ``keep`` rules through the
pipeline, checked against a brute-force reading of the same rules."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest

from curator.core import pipeline as pl
from curator.core.executors import LocalExecutor
from curator.core.runner import Runner
from curator.dedup.url_key import url_key
from tests.dedup.helpers_dedup import output_ids, rejected, write_pipeline
from tests.helpers import run_cli


def run_local(path: Path) -> dict:
    return Runner(pl.load(str(path)), LocalExecutor()).run()


def write_shards(folder: Path, docs: list[dict], shards: int) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for k in range(shards):
        with open(folder / f"part{k}.jsonl", "wb") as f:
            for d in docs[k::shards]:
                f.write(orjson.dumps(d) + b"\n")
    return f"{folder}/part*.jsonl"


def file_order(docs: list[dict], shards: int) -> list[dict]:
    return [d for k in range(shards) for d in docs[k::shards]]


@pytest.mark.parametrize(
    "raw,key",
    [
        ("HTTPS://Example.COM/a?utm_source=x&id=3&fbclid=1#top", "http://example.com/a?id=3"),
        ("http://example.com:80", "http://example.com/"),
        ("https://example.com:443/", "http://example.com/"),
        ("http://example.com:443/", "http://example.com:443/"),
        ("http://user:secret@Example.com./p%2fq", "http://example.com/p%2Fq"),
        ("http://example.com/?UTM_Medium=m&GCLID=2&a=1&b", "http://example.com/?a=1&b"),
        ("http://example.com/Path?b=2&a=1", "http://example.com/Path?b=2&a=1"),
        ("http://[::1]:8080/x", "http://[::1]:8080/x"),
        ("  example.com/x  ", "example.com/x"),
        ("http://example.com:99999/", "http://example.com:99999/"),
    ],
)
def test_url_key_rule(raw, key):
    assert url_key(raw) == key


def _url_corpus(rng: random.Random) -> list[dict]:
    """Pages under several spellings of their URL, some without one, bodies of random length."""
    docs = []
    for i in range(120):
        base = f"example{i % 40}.org/page/{i}"
        spellings = [
            f"http://{base}",
            f"HTTPS://{base.upper().split('/')[0]}/page/{i}",
            f"https://{base}?utm_campaign=c{i}#s",
            f"http://{base}:80",
        ]
        for j in range(rng.randrange(1, 4)):
            docs.append(
                {
                    "id": f"u{i}-{j}",
                    "text": "x" * rng.randrange(1, 60),
                    "url": rng.choice(spellings),
                    "rank": rng.choice([1, 2, 2, None]),
                }
            )
    docs += [{"id": f"nourl{i}", "text": "same text"} for i in range(5)]
    rng.shuffle(docs)
    return docs


def _brute(docs: list[dict], key, priority) -> dict[str, str]:
    """id -> kept id, over documents in input order, by the stated rule."""
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(docs):
        k = key(d)
        if k is not None:
            groups.setdefault(k, []).append(i)
    out = {}
    for members in groups.values():
        best = min(members, key=lambda i: (-priority(docs[i]), i))
        out.update({docs[i]["id"]: docs[best]["id"] for i in members if i != best})
    return out


def _rank(d: dict) -> float:
    v = d.get("rank")
    return float(v) if isinstance(v, int) else float("-inf")


@pytest.mark.parametrize(
    "keep,priority",
    [
        ("first", lambda d: 0.0),
        ("longest", lambda d: float(len(d["text"]))),
        ("meta.rank", _rank),
    ],
)
def test_url_key_and_keep_rules(tmp_path, keep, priority):
    docs = _url_corpus(random.Random(5))
    inputs = write_shards(tmp_path / "in", docs, 3)
    y = write_pipeline(
        tmp_path / "p.yaml",
        tmp_path / "w",
        inputs,
        f"  - exact_dedup: {{key: url, keep: '{keep}', partitions: 2}}\n",
    )
    res = run_local(y)
    ordered = file_order(docs, 3)
    want = _brute(ordered, lambda d: url_key(d["url"]) if "url" in d else None, priority)
    got = {k: v["duplicate_of"] for k, v in rejected(tmp_path / "w", "exact_dedup").items()}
    assert len(want) > 50 and got == want
    assert all(not k.startswith("nourl") for k in got)  # no URL: never a duplicate
    stage = next(s for s in res["stages"] if s["id"] == "exact_dedup")
    counters = stage["counters"]
    assert counters["documents_without_key"] == 5
    assert sorted(output_ids(tmp_path / "w", "exact_dedup")) == sorted(
        d["id"] for d in docs if d["id"] not in want
    )


def test_meta_key_compares_json_values(tmp_path):
    docs = [
        {"id": "a", "text": "1", "g": 1},
        {"id": "b", "text": "2", "g": "1"},
        {"id": "c", "text": "3", "g": {"x": 1, "y": 2}},
        {"id": "d", "text": "4", "g": 1},
        {"id": "e", "text": "5", "g": {"y": 2, "x": 1}},
        {"id": "f", "text": "6"},
        {"id": "g", "text": "7", "g": "1"},
    ]
    inputs = write_shards(tmp_path / "in", docs, 1)
    y = write_pipeline(
        tmp_path / "p.yaml",
        tmp_path / "w",
        inputs,
        "  - exact_dedup: {key: meta.g, keep: longest}\n",
    )
    run_local(y)
    got = {k: v["duplicate_of"] for k, v in rejected(tmp_path / "w", "exact_dedup").items()}
    assert got == {"d": "a", "e": "c", "g": "b"}  # 1 and "1" differ; key order does not matter


def test_keep_longest_on_text_key_ties_go_first(tmp_path):
    docs = [
        {"id": "a", "text": "Hello  world"},
        {"id": "b", "text": "hello world"},
        {"id": "c", "text": "HELLO   WORLD"},
        {"id": "d", "text": "hello world "},
    ]
    inputs = write_shards(tmp_path / "in", docs, 2)  # file order: a, c, b, d
    y = write_pipeline(
        tmp_path / "p.yaml", tmp_path / "w", inputs, "  - exact_dedup: {keep: longest}\n"
    )
    run_local(y)
    got = {k: v["duplicate_of"] for k, v in rejected(tmp_path / "w", "exact_dedup").items()}
    assert got == {"a": "c", "b": "c", "d": "c"}


@pytest.mark.parametrize("stage,key", [("{key: body}", "key"), ("{keep: 'meta.'}", "keep")])
def test_bad_key_or_keep_is_one_line_naming_the_key(tmp_path, stage, key):
    inputs = write_shards(tmp_path / "in", [{"id": "a", "text": "x"}], 1)
    y = write_pipeline(tmp_path / "p.yaml", tmp_path / "w", inputs, f"  - exact_dedup: {stage}\n")
    r = run_cli("validate", str(y), check=False)
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert f"exact_dedup.{key}" in r.stderr or f"'{key}'" in r.stderr, r.stderr


def test_url_key_keep_longest_same_on_dask_workers_and_mpi_ranks(tmp_path):
    """``exact_dedup: {key: url, keep: longest}`` through ``curator run`` on the local, Dask
    (2 workers) and MPI (2 ranks) executors: the same documents kept, each removal naming the
    same kept document, which is the rule's."""
    docs = _url_corpus(random.Random(8))
    inputs = write_shards(tmp_path / "in", docs, 3)
    stage = "  - exact_dedup: {key: url, keep: longest, partitions: 3}\n"
    results = {}
    for name, executor, ranks in (
        ("local", "{type: local}", 0),
        ("dask", "{type: dask, workers: 2}", 0),
        ("mpi", "{type: mpi}", 2),
    ):
        wd = tmp_path / f"w{name}"
        y = write_pipeline(tmp_path / f"{name}.yaml", wd, inputs, stage, executor)
        r = run_cli("run", str(y), mpi=ranks, check=False)
        assert r.returncode == 0, f"{name}: {r.stderr[-2000:]}"
        got = {k: v["duplicate_of"] for k, v in rejected(wd, "exact_dedup").items()}
        results[name] = (got, output_ids(wd, "exact_dedup"))
    want = _brute(
        file_order(docs, 3),
        lambda d: url_key(d["url"]) if "url" in d else None,
        lambda d: float(len(d["text"])),
    )
    assert len(want) > 50 and results["local"][0] == want
    assert results["dask"] == results["local"]
    assert results["mpi"] == results["local"]
