"""bench/line_filter.py's labels and features (the measurement that rejected a learned line
filter, docs/extract.md#learned-line-filter): a line is main text by its word trigrams in the
gold, not by loose word overlap, and the features see the page's link texts."""

from __future__ import annotations

import numpy as np

from bench.line_filter import FEATURES, anchor_texts, features, label

GOLD = "Heute habe ich die Rosen geschnitten. Beiträge zum Thema Garten sind willkommen."


def test_a_line_is_main_text_by_its_trigrams_not_by_shared_words() -> None:
    lines = ["Heute habe ich die Rosen geschnitten.",   # in the gold, in order
             "Garten: Beiträge",                         # both words in the gold, not together
             "Thema Garten",                             # a 2-word run of the gold
             "Garten Rosen die ich habe heute"]          # the gold's words, shuffled
    assert label(lines, GOLD).tolist() == [1.0, 0.0, 1.0, 0.0]


def test_features_see_link_texts_repeats_and_positions() -> None:
    html = '<body><a href="/">Startseite</a><p>Text</p><a href="/x">Re: Foto-Threads</a></body>'
    assert anchor_texts(html) == {"startseite", "re foto threads"}
    lines = ["Startseite", "Re: Foto-Threads", "Ein langer Satz mit vielen Wörtern darin.",
             "Re: Foto-Threads"]
    x = features(lines, anchor_texts(html))
    col = {f: x[:, i] for i, f in enumerate(FEATURES)}
    assert x.shape == (4, len(FEATURES))
    assert col["is_link"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert col["repeated"].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert col["sent_end"].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert np.allclose(col["pos"], [0, 1 / 3, 2 / 3, 1])
    assert features([], set()).shape == (0, len(FEATURES))
