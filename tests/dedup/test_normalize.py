"""The ``fineweb`` normalisation preset equals datatrove's (``simplify_text``, its spaCy word
split, its MinHash signatures) on real text, and fuzzy_dedup with FineWeb's recipe removes
what datatrove's MinHash pipeline removes."""

from __future__ import annotations

import random

import numpy as np
import pytest
import xxhash

from curator.base.errors import ConfigError
from curator.dedup.minhash import MinHasher
from curator.dedup.normalize import fineweb_batch, fineweb_words, normalize_batch, resolve
from curator.dedup.xxh64 import xxh64_ranges
from tests.dedup.helpers_dedup import (
    near_copy,
    rejected,
    wiki_pages,
    wiki_paragraphs,
    write_pipeline,
)
from tests.helpers import run_cli

#: Hand-made edge cases on top of the real text: batch separator inside a text, marks at the
#: edges, final sigma, dotted capital I, non-Latin digits and separators, fullwidth digits.
EDGE = ["a\ue000b 1,5", "\u0301 start", "end \u0301", "ΟΔΟΣ ΟΔΟΣ.", "İstanbul İ", "٣٫١٤ and ۱۲",
        "１２３ fullwidth", "", "   ", "dont cant im gonna 0km x² ©2024 ‘q’", "naïve café coöp"]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    return wiki_pages() + wiki_paragraphs()[:2000] + EDGE


def test_fineweb_text_equals_datatrove_simplify_text(texts):
    from datatrove.utils.text import PUNCTUATION, simplify_text

    from curator.dedup import normalize

    assert normalize._PUNCT == PUNCTUATION
    ours = fineweb_batch(texts)
    assert [i for i, (a, t) in enumerate(zip(ours, texts)) if a != simplify_text(t)] == []
    # batch boundaries do not matter
    assert fineweb_batch(texts[:7]) + fineweb_batch(texts[7:]) == ours


def test_fineweb_words_equal_datatrove_tokenizer(texts):
    from datatrove.utils.text import simplify_text
    from datatrove.utils.word_tokenizers import load_word_tokenizer

    tok = load_word_tokenizer("en")
    sample = texts[206:806] + EDGE  # 600 real paragraphs
    ours = fineweb_words(sample)
    bad = [i for i, t in enumerate(sample) if ours[i].split() != tok.word_tokenize(
        simplify_text(t))]
    assert bad == []
    # apostrophes are punctuation (-> "don t"); spaCy's special cases split the bare forms
    assert fineweb_words(["Don't dont cant Im gonna 5km"]) == ["don t do nt ca nt i m gon na 0 km"]


def test_presets_and_yaml_values():
    assert resolve(True) == "basic" and resolve(False) == "none" and resolve("fineweb")
    with pytest.raises(ConfigError, match="unknown normalisation 'fine'"):
        resolve("fine")
    t = ["  Hello,  WORLD 42!  "]
    assert normalize_batch(t, "none") == t
    assert normalize_batch(t, "basic") == ["hello, world 42!"]
    assert normalize_batch(t, "fineweb") == ["hello world 0"]


def test_xxh64_ranges_equal_xxhash():
    rng = random.Random(3)
    parts = [bytes(rng.randrange(256) for _ in range(n))
             for n in [0, 1, 3, 4, 7, 8, 9, 15, 16, 31, 32, 33, 64, 65, 100, 257] * 20]
    parts += [p.encode() for p in wiki_paragraphs()[:50]]  # long real texts: many stripes
    buf = np.frombuffer(b"".join(parts), dtype=np.uint8)
    lens = np.array([len(p) for p in parts])
    got = xxh64_ranges(buf, np.cumsum(lens) - lens, lens)
    assert got.tolist() == [xxhash.xxh64_intdigest(p) for p in parts]


def test_datatrove_scheme_signatures_bit_identical(tmp_path):
    from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature

    docs = wiki_paragraphs()[:300] + ["too short", ""]
    step = MinhashDedupSignature(str(tmp_path), MinhashConfig(), language="en")
    step._hash_func = lambda s: xxhash.xxh64_intdigest(s.encode())  # xxhash >= 4 wants bytes
    sig, full = MinHasher(112, 1, 5, "word", "fineweb", scheme="datatrove",
                          batch_chars=50_000).signatures(docs)
    for i, d in enumerate(docs):
        sh = step.get_shingles(d)
        assert full[i] == (sh.size > 0)
        if sh.size:
            assert sig[i].tolist() == np.concatenate(step.get_signature(sh)).tolist(), i


def _datatrove_removed(docs: list[dict], tmp) -> set[str]:
    from datatrove.data import Document
    from datatrove.pipeline.dedup.minhash import (
        MinhashConfig,
        MinhashDedupBuckets,
        MinhashDedupCluster,
        MinhashDedupFilter,
        MinhashDedupSignature,
    )

    cfg = MinhashConfig()  # FineWeb: 5-grams, 14 x 8, seed 1, xxhash 64
    step = MinhashDedupSignature(str(tmp / "s"), cfg, language="en")
    step._hash_func = lambda s: xxhash.xxh64_intdigest(s.encode())
    step.run(iter(Document(text=d["text"], id=d["id"]) for d in docs))
    for r in range(cfg.num_buckets):
        MinhashDedupBuckets(str(tmp / "s"), str(tmp / "b"), config=cfg).run(
            rank=r, world_size=cfg.num_buckets)
    MinhashDedupCluster(str(tmp / "b"), str(tmp / "r"), config=cfg).run()
    kept = {d.id for d in MinhashDedupFilter(str(tmp / "r")).run(
        iter(Document(text=d["text"], id=d["id"]) for d in docs))}
    return {d["id"] for d in docs} - kept


def test_fuzzy_fineweb_agrees_with_datatrove_pipeline(tmp_path):
    import orjson

    rng = random.Random(5)
    paras = wiki_paragraphs()[2000:2500]
    docs = [{"id": f"w{i}", "text": t} for i, t in enumerate(paras)]
    planted = set()
    for k, i in enumerate(rng.sample(range(len(paras)), 60)):
        docs.append({"id": f"w{i}-c{k}", "text": near_copy(paras[i], rng, k % 4 == 0)})
        planted.add((f"w{i}", f"w{i}-c{k}"))
    rng.shuffle(docs)
    (tmp_path / "in").mkdir()
    with open(tmp_path / "in" / "a.jsonl", "wb") as f:  # one shard: file order = input order
        f.writelines(orjson.dumps(d) + b"\n" for d in docs)
    fw = ("  - fuzzy_dedup: {shingle: word, ngram: 5, num_perm: 112, bands: 14, rows: 8, "
          "seed: 1, scheme: datatrove, normalize: fineweb}\n")
    basic = fw.replace("scheme: datatrove, normalize: fineweb", "scheme: legacy")
    removed = {}
    for name, stage in (("fineweb", fw), ("basic", basic)):
        y = write_pipeline(tmp_path / f"{name}.yaml", tmp_path / name,
                           f"{tmp_path}/in/a.jsonl", stage)
        r = run_cli("run", str(y), check=False)
        assert r.returncode == 0, r.stderr[-2000:]
        removed[name] = set(rejected(tmp_path / name, "fuzzy_dedup"))
    theirs = _datatrove_removed(docs, tmp_path / "dt")
    jac = len(removed["fineweb"] & theirs) / len(removed["fineweb"] | theirs)
    assert jac >= 0.9, (jac, len(removed["fineweb"]), len(theirs))
    # the planted copies differ only in what the preset undoes (and one word in a quarter):
    # one of each pair goes (whichever came second in the shuffled input)
    def found(rem: set[str]) -> int:
        return sum(a in rem or b in rem for a, b in planted)

    assert found(removed["fineweb"]) >= 0.95 * len(planted)
    assert found(removed["basic"]) < 0.5 * len(planted)
