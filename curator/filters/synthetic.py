"""Seeded synthetic web-like documents (prose, menus, spam, lists, repetition, tables...).

Used by the tests, the benchmark and the sample pipelines so that every filter sees documents
that should be kept and documents that should be removed, without shipping a crawl.
"""

from __future__ import annotations

import random


def _words(s: str) -> list[str]:
    return s.split()

_NOUNS = _words(
    "river city garden teacher market window history engine village letter forest "
    "company student problem season journey library doctor island mountain kitchen "
    "network theory painting harbor festival machine language council"
)
_VERBS = _words(
    "describes explains carries builds changes follows protects records measures "
    "reaches opens supports watches covers remembers improves"
)
_ADJS = _words(
    "old quiet bright small careful ancient modern local narrow famous simple "
    "remarkable early distant public"
)
_ADVS = _words(
    "slowly often rarely quickly carefully finally usually gently"
)
_CONNECT = ["and", "but", "because", "while", "so that", "although", "with"]
_SPAM = _words(
    "buy cheap best deal free click now discount offer sale win prize"
)


def sentence(rng: random.Random) -> str:
    """One grammatical-looking English sentence with common stop words."""
    def np() -> str:
        return f"the {rng.choice(_ADJS)} {rng.choice(_NOUNS)}"
    s = f"{np()} {rng.choice(_VERBS)} {np()} of {np()}"
    if rng.random() < 0.6:
        s += f" {rng.choice(_CONNECT)} {np()} {rng.choice(_ADVS)} {rng.choice(_VERBS)} {np()}"
    if rng.random() < 0.3:
        s += f" to have {np()}"
    s = s[0].upper() + s[1:]
    return s + rng.choice([".", ".", ".", "!", "?"])


def prose(rng: random.Random, paragraphs: int | None = None) -> str:
    n = paragraphs or rng.randint(2, 6)
    return "\n\n".join(" ".join(sentence(rng) for _ in range(rng.randint(3, 8)))
                       for _ in range(n))


def menu(rng: random.Random) -> str:
    items = ["Home", "About us", "Contact", "Blog", "Shop", "Login", "Sign up", "FAQ", "Cart"]
    lines = [rng.choice(items) for _ in range(rng.randint(20, 60))]
    lines.append("Privacy Policy | Terms of Use | This site uses cookies")
    return "\n".join(lines)


def spam(rng: random.Random) -> str:
    words = [rng.choice(_SPAM) for _ in range(rng.randint(60, 200))]
    tags = " ".join("#" + rng.choice(_SPAM) for _ in range(rng.randint(10, 40)))
    return " ".join(words) + "\n" + tags


def bullet_list(rng: random.Random) -> str:
    return "\n".join(f"- {rng.choice(_ADJS)} {rng.choice(_NOUNS)}"
                     for _ in range(rng.randint(30, 80)))


def repeated(rng: random.Random) -> str:
    para = prose(rng, 1)
    return "\n\n".join([para] * rng.randint(4, 10))


def ellipses(rng: random.Random) -> str:
    return "\n".join(sentence(rng)[:-1] + "..." for _ in range(rng.randint(8, 20)))


def table(rng: random.Random) -> str:
    return "\n".join(" ".join(str(rng.randint(0, 99999)) for _ in range(8))
                     for _ in range(rng.randint(10, 40)))


def code(rng: random.Random) -> str:
    body = "\n".join(f"  var x{i} = {{a: {i}}}; // {sentence(rng)}" for i in range(20))
    return "function f() {\n" + body + "\n}"


def short(rng: random.Random) -> str:
    return sentence(rng)


KINDS = {"prose": prose, "menu": menu, "spam": spam, "list": bullet_list,
         "repeated": repeated, "ellipses": ellipses, "table": table, "code": code,
         "short": short}
#: Kinds a reasonable quality filter keeps; all others should be removed.
GOOD_KINDS = frozenset({"prose"})
#: Kinds made of prose words (repeated or too short): a bag-of-words quality classifier rates
#: them like prose; the repetition and length heuristics are what remove them.
PROSE_WORD_KINDS = frozenset({"prose", "repeated", "short"})


def documents(n: int, seed: int = 0, prose_share: float = 0.5) -> list[dict[str, str]]:
    """``n`` records ``{"id", "text", "kind"}``: about ``prose_share`` prose, the rest spread
    over the bad kinds."""
    rng = random.Random(seed)  # noqa: S311 - seeded synthetic text, not a secret
    bad = [k for k in KINDS if k not in GOOD_KINDS]
    out = []
    for i in range(n):
        kind = "prose" if rng.random() < prose_share else rng.choice(bad)
        out.append({"id": f"doc-{seed}-{i}", "text": KINDS[kind](rng), "kind": kind})
    return out


MULTILINGUAL = [
    "Le conseil municipal a voté hier soir le nouveau plan de circulation du centre-ville.",
    "Der Gemeinderat hat gestern Abend den neuen Verkehrsplan für die Innenstadt beschlossen.",
    "El ayuntamiento aprobó anoche el nuevo plan de tráfico para el centro de la ciudad.",
    "市议会昨晚通过了市中心新的交通规划，将于下个月开始实施。",
    "市議会は昨夜、市中心部の新しい交通計画を可決しました。",
]
MOJIBAKE = "The councilâ€™s plan doesnâ€™t change the cafÃ© opening hours."


def write_sample(out_dir: str, seed: int = 0) -> None:
    """Write the small sample used by ``pipelines/fineweb-like.yaml`` and ``nemo-like.yaml``:
    ``crawl.jsonl`` (mixed quality, a few other languages, mojibake, planted evaluation
    questions), ``wiki.jsonl`` (reference prose) and ``eval/qa.jsonl``."""
    import json
    import os

    rng = random.Random(seed)  # noqa: S311 - seeded synthetic text, not a secret
    os.makedirs(os.path.join(out_dir, "eval"), exist_ok=True)
    vocab = _words("zorbia quantum lemma vertex prime integral photon enzyme treaty dynasty "
                   "glacier orbit velocity theorem matrix")
    questions = [" ".join(rng.choice(vocab) for _ in range(18)).capitalize() + "?"
                 for _ in range(20)]
    crawl = documents(160, seed=seed + 1, prose_share=0.5)
    for i, q in enumerate(questions[:6]):  # contaminated documents
        crawl[i * 20].update(text=prose(rng, 2) + "\n\n" + q + "\n\n" + prose(rng, 2),
                             kind="prose")
    for i, t in enumerate(MULTILINGUAL):
        crawl.append({"id": f"ml-{i}", "text": "\n".join([t] * 6), "kind": "other_language"})
    crawl.append({"id": "mojibake-0", "text": MOJIBAKE + "\n\n" + prose(rng, 3),
                  "kind": "prose"})
    wiki = [{"id": f"wiki-{i}", "text": prose(rng)} for i in range(120)]

    def dump(name: str, recs: list[dict]) -> None:
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")

    dump("crawl.jsonl", crawl)
    dump("wiki.jsonl", wiki)
    dump("eval/qa.jsonl", [{"id": i, "question": q, "answer": "yes"}
                           for i, q in enumerate(questions)])


if __name__ == "__main__":  # python -m curator.filters.synthetic data/sample/filters
    import sys

    write_sample(sys.argv[1] if len(sys.argv) > 1 else "data/sample/filters")
