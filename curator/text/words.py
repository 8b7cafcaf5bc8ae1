"""Word splitting per language: a real segmenter where words are not separated by spaces,
Unicode rules elsewhere.

Chinese (jieba), Japanese (Sudachi, split mode A, core dictionary), Korean (Kiwi: morphemes)
and Thai (PyThaiNLP ``newmm-safe``) get the segmenter FineWeb-2 used through datatrove's word
tokenizers, with the same output on the same text: tokens stripped, whitespace-only ones
dropped. "我爱北京天安门" is 我 / 爱 / 北京 / 天安门 in Chinese. The segmenters are optional
(``pip install 'curator-pipeline[words]'``), imported on first use; asking for a language whose
segmenter is missing raises :class:`SegmenterMissing` (one line naming the language and the
package), never a silent fall back to another split.

Every other language (and a document of unknown language) is split by script: characters of
scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar) one per
word, since without a dictionary that is the unit word-based heuristics can be applied to
consistently; everything else on Unicode word characters: a word is a run of letters/digits
that may contain inner apostrophes, hyphens or dots (``don't``, ``state-of-the-art``, ``U.S``,
``3.14``); runs of other non-space characters (``...``, ``#``, ``--``) are separate tokens,
as a tokenizer such as NLTK's would produce, so filters can count or ignore them.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
import threading
from collections.abc import Callable

#: Scripts written without spaces: one character is one word.
NO_SPACE_SCRIPTS = (
    "\u0e00-\u0e7f"  # Thai
    "\u0e80-\u0eff"  # Lao
    "\u1000-\u109f"  # Myanmar
    "\u1780-\u17ff"  # Khmer
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0002fa1f"  # CJK extensions B-F, compatibility supplement
)
_NS = NO_SPACE_SCRIPTS
_WORD = re.compile(
    rf"[{_NS}]"  # one character of a no-space script
    rf"|[^\W{_NS}]+(?:['’.\-][^\W{_NS}]+)*"  # a word, with inner ' ’ . -
    r"|[^\w\s]+"  # a run of punctuation / symbols
)
_HAS_NS = re.compile(rf"[{_NS}]")

#: Language -> (segmenter, the packages to install for it).
SEGMENTERS: dict[str, tuple[str, str]] = {
    "zh": ("jieba", "jieba"),
    "ja": ("Sudachi", "sudachipy sudachidict-core"),
    "ko": ("Kiwi", "kiwipiepy"),
    "th": ("PyThaiNLP", "pythainlp"),
}
#: The distributions whose code or dictionaries decide the words of :data:`SEGMENTERS`:
#: :mod:`curator.core.codehash` keys the results of every stage that splits words on their
#: installed versions, so a rerun never reuses results of another segmenter or dictionary.
DISTRIBUTIONS = ("jieba", "sudachipy", "sudachidict-core", "kiwipiepy", "kiwipiepy-model",
                 "pythainlp")
#: Other names of the same languages (ISO 639-2/3, macrolanguage members).
_ALIASES = {"zho": "zh", "chi": "zh", "cmn": "zh", "jpn": "ja", "kor": "ko", "tha": "th"}
#: Sudachi refuses longer inputs (49149 bytes); datatrove cuts at 40000 bytes too.
_SUDACHI_BYTES = 40_000
#: Kiwi mis-handles very long digit runs (datatrove removes them before Kiwi, as here).
_LONG_NUMBER = re.compile("[0-9,]{20,}")


class SegmenterMissing(ImportError):
    """The segmenter a language needs is not installed (the message says what to install)."""


@functools.lru_cache(maxsize=1024)
def segmented_language(lang: str | None) -> str | None:
    """The language code of :data:`SEGMENTERS` that ``lang`` (``zh``, ``zh-Hant``,
    ``cmn_Hani``, ``JA``...) names, or None when its words are split by script."""
    if not lang:
        return None
    code = lang.replace("-", "_").split("_", 1)[0].lower()
    code = _ALIASES.get(code, code)
    return code if code in SEGMENTERS else None


def split_words(text: str, lang: str | None = None) -> list[str]:
    """Words of ``text`` in order. ``lang`` (a language code, as ``language_id`` writes it)
    chooses the segmenter of a language in :data:`SEGMENTERS`; any other language, or None,
    is split by script (punctuation runs as their own tokens, characters of no-space scripts
    one by one). Raises :class:`SegmenterMissing` when the segmenter is not installed."""
    code = segmented_language(lang)
    if code is None:
        return _WORD.findall(text)
    return segmenter(code)(text)


def has_no_space_script(text: str) -> bool:
    """True if ``text`` contains characters of a script written without spaces."""
    return _HAS_NS.search(text) is not None


def distribution_versions() -> dict[str, str]:
    """``{distribution: installed version or "missing"}`` of :data:`DISTRIBUTIONS`."""
    out = {}
    for d in DISTRIBUTIONS:
        try:
            out[d] = importlib.metadata.version(d)
        except importlib.metadata.PackageNotFoundError:
            out[d] = "missing"
    return out


# -- the segmenters (loaded once per process; Sudachi's tokenizer once per thread) ---------

_lock = threading.Lock()
_loaded: dict[str, Callable[[str], list[str]]] = {}


def segmenter(code: str) -> Callable[[str], list[str]]:
    """The word splitter of language ``code`` (a key of :data:`SEGMENTERS`), loaded on
    first use in this process."""
    fn = _loaded.get(code)
    if fn is None:
        with _lock:
            fn = _loaded.get(code)
            if fn is None:
                name, packages = SEGMENTERS[code]
                try:
                    fn = _LOADERS[code]()
                except ImportError as e:
                    raise SegmenterMissing(
                        f"words of language '{code}' need the {name} segmenter, not installed "
                        f"({e.name or e}): pip install {packages} (or curator-pipeline[words])"
                    ) from None
                _loaded[code] = fn
    return fn


def _strip(tokens: list[str]) -> list[str]:
    """Tokens stripped, whitespace-only ones dropped (datatrove's ``strip_strings``)."""
    return [s for s in map(str.strip, tokens) if s]


def _jieba() -> Callable[[str], list[str]]:
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)  # its dictionary-loading lines, once per process
    cut = jieba.dt.cut

    def split(text: str) -> list[str]:
        return _strip(list(cut(text, cut_all=False, HMM=True)))

    return split


def _sudachi() -> Callable[[str], list[str]]:
    import sudachidict_core  # noqa: F401  (the dictionary: named if missing)
    from sudachipy import Dictionary, SplitMode

    dictionary = Dictionary(dict="core")
    local = threading.local()  # a tokenizer is used by one thread at a time

    def split(text: str) -> list[str]:
        tok = getattr(local, "tok", None)
        if tok is None:
            tok = local.tok = dictionary.create(mode=SplitMode.A)
        out: list[str] = []
        for part in _chunks(text, _SUDACHI_BYTES):
            out += [s for m in tok.tokenize(part) if (s := m.surface().strip())]
        return out

    return split


def _chunks(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` UTF-8 bytes, cut after a newline where one
    is close enough (a word never spans one), else between characters."""
    if len(text) * 4 <= limit or len(text.encode()) <= limit:
        return [text]
    out: list[str] = []
    step = limit // 4  # characters that always fit
    while text:
        if len(text.encode()) <= limit:
            out.append(text)
            break
        cut = text.rfind("\n", 0, step) + 1 or step
        out.append(text[:cut])
        text = text[cut:]
    return out


def _kiwi() -> Callable[[str], list[str]]:
    import warnings

    from kiwipiepy import Kiwi

    with warnings.catch_warnings():  # 0 is one thread since 0.21, and it says so
        warnings.simplefilter("ignore", DeprecationWarning)
        tokenize = Kiwi(num_workers=0).tokenize

    def split(text: str) -> list[str]:
        text = _LONG_NUMBER.sub("", text)
        return _strip([text[t.start:t.end] for t in tokenize(text)])

    return split


def _thai() -> Callable[[str], list[str]]:
    from pythainlp.tokenize import word_tokenize

    def split(text: str) -> list[str]:
        return _strip(word_tokenize(text, engine="newmm-safe", keep_whitespace=False))

    return split


_LOADERS: dict[str, Callable[[], Callable[[str], list[str]]]] = {
    "zh": _jieba, "ja": _sudachi, "ko": _kiwi, "th": _thai}
