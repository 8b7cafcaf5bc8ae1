"""The base of the one-line heuristic presets (``gopher_quality``, ``gopher_repetition``,
``fineweb_quality``, ``nemo_english``): each preset's file lists its rules with the published
parameters; this class runs them over one shared :class:`DocFeatures` per document, rejects
with ``preset:rule`` reasons, and can write every rule's value to ``meta["signals"]``."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from curator.base.document import Document
from curator.base.errors import ConfigError
from curator.core.params import StageParams
from curator.core.stage import Filter
from curator.filters.features import DocFeatures
from curator.filters.rules import HeuristicRule
from curator.text.words import segmented_language

#: (key in reasons, e.g. ``word_count`` in ``gopher_quality:word_count``; the rule; its
#: published parameters)
RuleSpec = tuple[str, type[HeuristicRule], dict[str, Any]]


class LanguageRules(BaseModel):
    """A preset's changes for one language (``languages: {zh: {disable: [...]}}``)."""

    model_config = ConfigDict(extra="forbid")

    disable: list[str] = []
    """Rules skipped for this language, besides the preset's ``disable``."""
    overrides: dict[str, dict[str, Any]] = {}
    """Rule parameters for this language, over the preset's ``overrides``."""


_LAST: tuple[str | None, DocFeatures | None] = (None, None)


def features_of(text: str, language: str | None = None) -> DocFeatures:
    """The :class:`DocFeatures` of ``text``, shared with the preset that saw the same string
    object just before: in a fused chain (``gopher_repetition -> gopher_quality ->
    c4_quality -> fineweb_quality``) a document passes from one preset to the next, and
    without this each split the words again (about 2% of the Common Crawl path's CPU). The
    check is identity (``is``) on an immutable ``str``, so a stage that changes the text
    (``c4_quality`` drops lines) gets new features, and so does the same text split as
    another language; one entry, so memory stays one document's."""
    global _LAST
    last_text, last = _LAST
    if last is not None and last_text is text and last.language == segmented_language(language):
        return last
    f = DocFeatures(text, language)
    _LAST = (text, f)
    return f


class HeuristicPreset(Filter):
    """Base of the one-line presets: an ordered list of rules sharing one feature cache."""

    #: The preset's rules, in the order they are tried (the first that fails is the reason).
    spec: ClassVar[list[RuleSpec]] = []

    class Params(StageParams):
        disable: list[str] = []
        """Rules to skip, by key (``word_count``...)."""
        overrides: dict[str, dict[str, Any]] = {}
        """Per-rule parameters by key, e.g. ``{word_count: {min_words: 100}}``."""
        languages: dict[str, LanguageRules] | Literal["recommended", "fineweb2"] | None = None
        """Rules by the document's language (``meta.language``, set by ``language_id``): a
        language's ``disable`` and ``overrides`` apply on top of the preset's for its
        documents. ``recommended``: curator's measured table (docs/filters.md, "Languages"):
        each language's own stop words, word lengths for Chinese, Japanese, Korean and Thai.
        ``fineweb2``: FineWeb-2's published per-language thresholds
        (:mod:`curator.filters.fineweb2`)."""
        language: str | None = None
        """The language of every document (its rules in ``languages`` and its word
        segmenter: ``zh``, ``ja``, ``ko``, ``th`` have one); null: the document's
        ``language_field``."""
        language_field: str = "language"
        """The metadata field holding the document's language."""
        annotate: bool = False
        """Also write every rule's value to ``meta.signals`` (still filtering)."""
        mode: Literal["filter", "annotate"] = "filter"
        """``annotate``: write signals and failed rules to meta and remove nothing."""

    def setup(self) -> None:
        self.rules = self._rules(self.disable, self.overrides, self.name)
        table = self.languages
        if table == "recommended":
            from curator.filters.language_recipes import recommended

            table = recommended(self.name, self.overrides)
        elif table == "fineweb2":
            from curator.filters.fineweb2 import table as fineweb2_table

            table = fineweb2_table(self.name, {k for k, _, _ in self.spec})
        #: language -> its rules (only languages that change something)
        self.by_language: dict[str, list[tuple[str, HeuristicRule]]] = {}
        for lang, spec in (table or {}).items():
            rules = spec if isinstance(spec, LanguageRules) else LanguageRules(**spec)
            over = {k: {**self.overrides.get(k, {}), **v} for k, v in rules.overrides.items()}
            self.by_language[lang] = self._rules(
                [*self.disable, *rules.disable], {**self.overrides, **over},
                f"{self.name}.languages.{lang}")

    def _rules(self, disable: list[str], overrides: dict[str, dict[str, Any]],
               where: str) -> list[tuple[str, HeuristicRule]]:
        keys = [k for k, _, _ in self.spec]
        for k in [*disable, *overrides]:
            if k not in keys:
                raise ConfigError(f"{where}: unknown rule '{k}' (rules: {', '.join(keys)})")
        # mode annotate (RedPajama-V2 style): every rule's value goes to meta["signals"], the
        # rules a document fails to meta["failed_rules"], and nothing is removed; a later
        # `select` stage filters on them
        self.annotate = self.annotate or self.mode == "annotate"
        rules: list[tuple[str, HeuristicRule]] = []
        for key, rule, params in self.spec:
            if key in disable:
                continue
            kw = {**params, **overrides.get(key, {})}
            try:
                rule.params_model()(**kw)  # its errors named as this preset's overrides
            except ValidationError as e:
                err = e.errors()[0]
                at = ".".join(map(str, err["loc"]))
                msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
                raise ConfigError(f"{where}.overrides.{key}"
                                  f"{'.' + at if at else ''}: {msg}") from None
            rules.append((f"{self.name}:{key}", rule(**kw)))
        return rules

    def check(self, doc: Document) -> str | None:
        if not doc.text.strip():
            if self.mode == "annotate":
                doc.meta["failed_rules"] = [*doc.meta.get("failed_rules", []),
                                            f"{self.name}:empty"]
                return None
            return f"{self.name}:empty"
        lang = self.language or doc.meta.get(self.language_field)
        lang = lang if isinstance(lang, str) else None
        f = features_of(doc.text, lang)
        rules = self.rules
        if self.by_language:
            rules = self.by_language.get(lang, rules)
        if not self.annotate:
            for reason, rule in rules:
                if not rule.passes(f):
                    return reason
            return None
        signals = doc.meta.setdefault("signals", {})
        first = None
        failed: list[str] = []
        for reason, rule in rules:
            v = rule.value(f)
            signals[reason] = round(float(v), 4)
            if not rule.ok(v):
                first = first or reason
                failed.append(reason)
        if self.mode == "annotate":
            prev = [r for r in doc.meta.get("failed_rules", [])
                    if not r.startswith(self.name + ":")]
            doc.meta["failed_rules"] = prev + failed
            return None
        return first
