"""Language identification with fastText's lid.176 model, shipped with curator.

The model (``curator/filters/models/lid.176.ftz``, CC BY-SA 3.0, see the README there) loads
without internet, once per worker process, and predicts whole batches in one C++ call.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from typing import Any

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.context import ShardContext
from curator.core.params import PositiveInt, Ratio, StageParams
from curator.core.stage import BatchStage, FilePath
from curator.filters.features import DocFeatures
from curator.text.words import has_no_space_script

DEFAULT_MODEL = os.path.join(os.path.dirname(__file__), "models", "lid.176.ftz")
_MODELS: dict[str, Any] = {}


def load_fasttext(path: str, what: str = "fastText model") -> Any:
    """A fastText model loaded once per process (keyed by path); ``ConfigError`` if absent."""
    model = _MODELS.get(path)
    if model is None:
        if not os.path.isfile(path):
            raise ConfigError(f"{what} not found: '{path}'")
        try:
            from fasttext.FastText import _FastText
        except ImportError as e:
            raise ConfigError(f"{what}: the 'fasttext' module is missing; install the filters "
                              "extra (pip install 'curator-pipeline[filters]')") from e
        try:
            model = _FastText(model_path=path)
        except ValueError as e:
            raise ConfigError(f"{what} '{path}' cannot be loaded: {e}") from None
        _MODELS[path] = model
    return model


def fasttext_predict(model: Any, lines: list[str], k: int) -> tuple[list, list]:
    """fastText's batch predict; texts with lone surrogates (not encodable as UTF-8) are
    repaired with U+FFFD instead of failing the whole batch."""
    try:
        return model.f.multilinePredict(lines, k, 0.0, "strict")
    except (UnicodeEncodeError, TypeError):  # pybind reports a bad str as a TypeError
        lines = [t.encode("utf-8", "replace").decode("utf-8") for t in lines]
        return model.f.multilinePredict(lines, k, 0.0, "strict")


def predict_languages(texts: list[str], model_path: str = DEFAULT_MODEL
                      ) -> tuple[list[str], list[float]]:
    """Top language code and probability of each text (newlines are spaces to fastText)."""
    model = load_fasttext(model_path, "language ID model")
    labels, probs = fasttext_predict(model, [t.replace("\n", " ") for t in texts], 1)
    return ([lab[0][9:] if lab else "unknown" for lab in labels],
            [float(p[0]) if len(p) else 0.0 for p in probs])


def check_languages(languages: Collection[str] | None, key: str,
                    model_path: str = DEFAULT_MODEL) -> None:
    """A one-line ``ConfigError`` naming ``key`` when a code is not one of the model's
    languages (``english`` for ``en`` would otherwise drop every page)."""
    if not languages or "://" in model_path:
        return
    model = load_fasttext(model_path, "language ID model")
    known = {lab.removeprefix("__label__") for lab in model.get_labels()}
    bad = [lang for lang in languages if lang not in known]
    if bad:
        raise ConfigError(f"{key}: '{bad[0]}' is not a language of the model "
                          f"{os.path.basename(model_path)} (ISO codes such as en, de, zh)")


#: A quick text shorter than this many words is never judged (resiliparse keeps a few words
#: of a page it reads badly; those say nothing about the language of the page's main text).
#: In scripts written without spaces each character is a word (curator.text.words).
GUESS_MIN_WORDS = 50
#: The guess reads this many characters of the quick text (fastText's time grows with the
#: text: 0.3 ms instead of 0.6 on real web pages); as safe as the whole text on 7,079 of them.
GUESS_CHARS = 4000


def other_language(text: str, languages: Collection[str], below: float,
                   model_path: str = DEFAULT_MODEL) -> str | None:
    """The top language of ``text`` when every one of ``languages`` has a probability under
    ``below`` there (the page is confidently in another language), else ``None``: the
    language guess that lets ``read_warc`` skip extracting pages ``language_id`` would drop
    (docs/acquire.md#language-guess)."""
    if len(text.split()) < GUESS_MIN_WORDS and (
            not has_no_space_script(text)
            or len(DocFeatures(text).alnum_words) < GUESS_MIN_WORDS):
        return None
    model = load_fasttext(model_path, "language ID model")
    labels, probs = fasttext_predict(model, [text[:GUESS_CHARS].replace("\n", " ")], -1)
    found = dict(zip(labels[0], probs[0], strict=True))
    if any(found.get(f"__label__{lang}", 0.0) >= below for lang in languages):
        return None
    return labels[0][0][9:] if labels[0] else "unknown"


class LanguageId(BatchStage):
    """Identify each document's language (fastText lid.176); keep chosen languages above a
    score. Writes ``language`` and ``language_score`` to meta."""

    name = "language_id"

    class Params(StageParams):
        languages: list[str] | None = None
        """ISO codes to keep (`[en, de]`); `null` keeps every language."""
        min_score: Ratio = 0.65
        """Minimum probability of the top language."""
        model_path: FilePath | None = None
        """Another fastText LID model (e.g. `lid.176.bin`); a missing file is a one-line error at
        validation."""
        label_only: bool = False
        """Only write ``meta.language``/``language_score``, never reject."""
        batch_size: PositiveInt = 1024
        """Documents per model call."""

    def setup(self) -> None:
        self.languages = frozenset(self.languages) if self.languages else None
        self.model_path = os.path.abspath(self.model_path) if self.model_path \
            else DEFAULT_MODEL
        if "://" not in self.model_path and not os.path.isfile(self.model_path):
            raise ConfigError(f"language_id.model_path: model file '{self.model_path}' not "
                              "found (omit model_path to use the bundled lid.176.ftz)")
        check_languages(self.languages, "language_id.languages", self.model_path)

    def process_batch(self, docs: list[Document], ctx: ShardContext) -> Iterable[Document]:
        langs, scores = predict_languages([d.text for d in docs], self.model_path)
        for doc, lang, score in zip(docs, langs, scores):
            doc.meta["language"] = lang
            doc.meta["language_score"] = round(score, 4)
            ctx.count(f"language:{lang}")
            if self.label_only:
                yield doc
            elif self.languages is not None and lang not in self.languages:
                ctx.reject(doc, "language_id:other_language")
            elif score < self.min_score:
                ctx.reject(doc, "language_id:low_score")
            else:
                yield doc
