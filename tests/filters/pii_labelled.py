"""The labelled PII set (``data/pii_labelled.txt``) and its per-kind precision and recall.

The file holds one snippet a line, with every PII item marked ``[[kind|value]]``; a snippet
without a mark is a look-alike (citation, version, date, ISBN, MAC, hash, UUID, private IP...)
that must come out unchanged. Shared by ``test_pii_redact.py`` and ``bench/bench_pii.py``."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

PATH = Path(__file__).with_name("data") / "pii_labelled.txt"
_MARK = re.compile(r"\[\[(\w+)\|(.+?)\]\]")

Span = tuple[int, int, str]


@dataclass(frozen=True)
class Snippet:
    group: str
    text: str
    spans: tuple[Span, ...]


def load(path: Path = PATH) -> list[Snippet]:
    out, group = [], ""
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            group = line[3:].strip()
            continue
        if not line.strip() or line.startswith("#"):
            continue
        text, spans, pos = [], [], 0
        n = 0
        for m in _MARK.finditer(line):
            text.append(line[pos:m.start()])
            n += m.start() - pos
            spans.append((n, n + len(m.group(2)), m.group(1)))
            text.append(m.group(2))
            n += len(m.group(2))
            pos = m.end()
        text.append(line[pos:])
        out.append(Snippet(group, "".join(text), tuple(spans)))
    return out


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def evaluate(find: Callable[[str], list[Span]], snippets: list[Snippet], kinds: tuple[str, ...]
             ) -> tuple[dict[str, Score], list[str]]:
    """Per-kind scores of ``find`` (text -> spans) on ``snippets``: a found span counts only if
    its start, end and kind equal a labelled one. Also the list of mistakes, for messages."""
    scores = {k: Score() for k in kinds}
    mistakes = []
    for s in snippets:
        want, got = set(s.spans), set(find(s.text))
        for a, b, k in got - want:
            scores[k].fp += 1
            mistakes.append(f"false {k}: {s.text[a:b]!r} in {s.text!r}")
        for a, b, k in want - got:
            scores[k].fn += 1
            mistakes.append(f"missed {k}: {s.text[a:b]!r} in {s.text!r}")
        for _, _, k in got & want:
            scores[k].tp += 1
    return scores, mistakes
