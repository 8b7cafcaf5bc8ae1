"""The line-level rules (``bullet_lines_filter``, ``ellipsis_lines_filter``,
``line_punct_filter``, ``short_lines_filter``, ``char_dup_filter``, ``newline_ratio_filter``,
``punctuation_filter``, ``boilerplate_filter``): shares of a document's lines and paragraphs
(sources of the defaults: :mod:`curator.filters.rules`)."""

from __future__ import annotations

from operator import itemgetter, methodcaller

from curator.core.params import NonNegFloat, NonNegInt, Ratio, StageParams
from curator.filters.features import DocFeatures
from curator.filters.rules import HeuristicRule, MaxRatioRule, WordParams, duplicates, ratio

#: Unicode sentence terminals (the BMP part of datatrove's TERMINAL_PUNCTUATION).
TERMINAL_PUNCTUATION = (
    "!.?։؝؞؟۔܀܁܂߹࠷࠹࠽࠾।॥၊။።፧፨᙮᜵᜶។៕៖៙៚᠃᠉᥄᥅᪨᪩᪪᪫᭚᭛᭞᭟᭽᭾᰻᰼᱾᱿‼‽⁇⁈⁉⸮⸼⹓⹔。"
    "꓿꘎꘏꛳꛷꡶꡷꣎꣏꤯꧈꧉꩝꩞꩟꫰꫱꯫﹒﹖﹗！．？｡"
)
BOILERPLATE_STRINGS = ["lorem ipsum", "privacy policy", "terms of use", "cookie policy",
                       "uses cookies", "use of cookies", "use cookies"]

class BulletLines(MaxRatioRule):
    """Fraction of lines that start with a bullet."""

    key = "bullet_lines"
    name = "bullet_lines_filter"
    source = "Gopher A.1.1 (90%); NeMo BulletsFilter"

    class Params(StageParams):
        max_ratio: Ratio = 0.9
        """Largest share of lines starting with a bullet kept."""
        bullets: list[str] = ["•", "-"]
        """Line starts (after leading spaces) that count as bullets."""

    def setup(self) -> None:
        self.bullets = tuple(self.bullets)

    def value(self, f: DocFeatures) -> float:
        lines = f.lines  # map/methodcaller keep the per-line loop in C
        return ratio(sum(map(methodcaller("startswith", self.bullets), map(str.lstrip, lines))),
                      len(lines))


class EllipsisLines(MaxRatioRule):
    """Fraction of lines that end with an ellipsis."""

    key = "ellipsis_lines"
    name = "ellipsis_lines_filter"
    source = "Gopher A.1.1 (30%); NeMo EllipsisFilter"

    class Params(StageParams):
        max_ratio: Ratio = 0.3
        """Largest share of lines ending with an ellipsis kept."""

    def value(self, f: DocFeatures) -> float:
        lines = f.lines
        return ratio(sum(map(methodcaller("endswith", ("...", "…")), map(str.rstrip, lines))),
                      len(lines))


class LinePunctuation(HeuristicRule):
    """Fraction of non-empty lines that end with terminal punctuation."""

    key = "line_punct"
    name = "line_punct_filter"
    source = "FineWeb line_punct_thr (0.12)"

    class Params(StageParams):
        min_ratio: Ratio = 0.12
        """Smallest share of non-empty lines ending in terminal punctuation kept."""
        exclude_zero: bool = False
        """Also keep documents where no line ends in terminal punctuation."""
        stop_chars: str = TERMINAL_PUNCTUATION
        """The terminal punctuation characters (default: Unicode sentence terminals)."""

    def setup(self) -> None:
        self.stop_chars = frozenset(self.stop_chars)  # single characters: test the last one

    def value(self, f: DocFeatures) -> float:
        lines = f.nonempty_lines  # non-empty, so line[-1] exists
        return ratio(sum(map(self.stop_chars.__contains__, map(itemgetter(-1), lines))),
                      len(lines))

    def ok(self, v: float) -> bool:
        return v >= self.min_ratio or (v == 0 and self.exclude_zero)


class ShortLines(MaxRatioRule):
    """Fraction of non-empty lines of at most ``max_length`` characters."""

    key = "short_lines"
    name = "short_lines_filter"
    source = "FineWeb short_line_thr (0.67, 30 chars)"

    class Params(StageParams):
        max_ratio: Ratio = 0.67
        """Largest share of short non-empty lines kept."""
        max_length: NonNegInt = 30
        """A line of at most this many characters is short."""

    def value(self, f: DocFeatures) -> float:
        lines = f.nonempty_lines
        return ratio(sum(map(self.max_length.__ge__, map(len, lines))), len(lines)) \
            if lines else 1.0


class DuplicateLineChars(MaxRatioRule):
    """Characters in repeated non-empty lines / characters of the text without newlines."""

    key = "char_dup"
    name = "char_dup_filter"
    source = "FineWeb char_duplicates_ratio (0.01)"

    class Params(StageParams):
        max_ratio: Ratio = 0.01
        """Largest share of characters in repeated lines kept."""

    def value(self, f: DocFeatures) -> float:
        return ratio(duplicates(f.nonempty_lines)[1],
                      len(f.text) - f.text.count("\n"))


class NewlineRatio(MaxRatioRule):
    """Newlines per word (lists and menus have one line per few words)."""

    key = "newline_ratio"
    name = "newline_ratio_filter"
    source = "FineWeb new_line_ratio (0.3)"

    class Params(WordParams):
        max_ratio: NonNegFloat = 0.3
        """Most newlines per word kept."""

    def value(self, f: DocFeatures) -> float:
        n = f.text.count("\n")
        return ratio(n, len(f.words)) if f.words else float(n > 0)

    def passes(self, f: DocFeatures) -> bool:
        # Split by script, each whitespace-separated chunk holds at least one token (every
        # non-space character is in one; a segmenter may drop some: Kiwi long numbers), so
        # str.split's count is a lower bound of the tokens and newlines / chunks an upper
        # bound of the value (float division is monotone): a text under the limit by that
        # bound passes without splitting it into tokens. In FineWeb's chain the text is
        # c4_quality's rewrite, whose tokens nothing else needs.
        if not f.known("words") and f.language is None:
            chunks = len(f.text.split())
            if chunks and self.ok(f.text.count("\n") / chunks):
                return True
        return self.ok(self.value(f))


class EndPunctuation(MaxRatioRule):
    """Fraction of sentences (non-empty lines) that do not end with an end mark."""

    key = "punctuation"
    name = "punctuation_filter"
    source = "NeMo PunctuationFilter (0.85)"

    class Params(StageParams):
        max_ratio: Ratio = 0.85
        """Largest share of non-empty lines without an end mark kept."""
        end_marks: str = ".!?\"'”’" + TERMINAL_PUNCTUATION
        """Characters that end a sentence (default: quotes and Unicode sentence terminals)."""

    def setup(self) -> None:
        self.end_marks = tuple(self.end_marks)

    def value(self, f: DocFeatures) -> float:
        lines = f.nonempty_lines
        return ratio(sum(1 for ln in lines if not ln.rstrip().endswith(self.end_marks)),
                      len(lines)) if lines else 1.0


class Boilerplate(MaxRatioRule):
    """Share of the text in paragraphs containing boilerplate strings (cookie/legal notices);
    1.0 when such a paragraph is the first or last one and ``at_top_or_bottom`` is set."""

    key = "boilerplate"
    name = "boilerplate_filter"
    source = "NeMo BoilerPlateStringFilter (0.4, remove if at top or bottom); C4 policy lines"

    class Params(StageParams):
        max_ratio: Ratio = 0.4
        """Largest share of characters in boilerplate paragraphs kept."""
        at_top_or_bottom: bool = True
        """Reject whenever the first or last paragraph is boilerplate."""
        strings: list[str] = BOILERPLATE_STRINGS
        """Boilerplate markers, matched case-insensitively inside paragraphs."""

    def setup(self) -> None:
        self.strings = [s.lower() for s in self.strings]

    def value(self, f: DocFeatures) -> float:
        paras = f.paragraphs
        total = sum(map(len, paras))
        bad = 0
        for i, p in enumerate(paras):
            lp = p.lower()
            if any(s in lp for s in self.strings):
                if self.at_top_or_bottom and (i == 0 or i == len(paras) - 1):
                    return 1.0
                bad += len(p)
        return ratio(bad, total)
