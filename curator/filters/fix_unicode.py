"""Unicode repair with ftfy: mojibake, HTML entities, control characters, odd widths.

ftfy's width fixing maps every full-width form to its ASCII twin with NFKC, which is right for
``ＦＵＬＬ ｗｉｄｔｈ`` in Latin text and wrong inside Chinese, Japanese or Korean, where
full-width punctuation (``：，（）！？``, the ideographic space) is the norm: ``首都：北京``
would become ``首都:北京``. So by default it runs only on documents without CJK characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal, Self

from pydantic import model_validator

from curator.base.document import Document
from curator.core.context import ShardContext
from curator.core.params import PositiveInt, StageParams
from curator.core.stage import ShardStage


def fix_character_width(text: str) -> str:
    """ftfy's width fixing alone (full-width Latin to ASCII, half-width kana to full)."""
    from ftfy.fixes import fix_character_width as ftfy_width

    return ftfy_width(text)

#: ASCII characters ftfy may change: controls other than tab/newline (\r included), DEL.
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: Characters ftfy's width fixing changes: the half-width and full-width forms block, and
#: the ideographic space.
_WIDTH = re.compile("[\u3000\uff01-\uffef]")
#: Han, kana, Hangul, bopomofo, CJK radicals/symbols/punctuation, compatibility ideographs
#: and the supplementary ideograph planes. Full-width Latin (U+FF01-FF5E) is not in it.
CJK = re.compile("[\u2e80-\u2fdf\u3000-\u30ff\u3100-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                 "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\U00020000-\U0003134f]")


class FixUnicode(ShardStage):
    """Repair broken Unicode with ftfy (fix_text); the options are ftfy's TextFixerConfig,
    except that width fixing skips CJK documents by default. Counts changed documents as
    ``fix_unicode:changed``."""

    name = "fix_unicode"

    class Params(StageParams):
        fix_encoding: bool = True
        """Undo mojibake (`doesnâ€™t` -> `doesn’t`)."""
        unescape_html: bool | Literal["auto"] = "auto"
        """`true`, `false` or `"auto"` (only when the text has no `<`)."""
        remove_terminal_escapes: bool = True
        """Remove ANSI terminal escape sequences."""
        restore_byte_a0: bool = True
        """Read a mojibake space before a quote as U+00A0 (ftfy)."""
        replace_lossy_sequences: bool = True
        """Replace undecodable mojibake remnants with U+FFFD (ftfy)."""
        decode_inconsistent_utf8: bool = True
        """Fix UTF-8 mojibake mixed into otherwise correct text (ftfy)."""
        fix_c1_controls: bool = True
        """Read C1 control characters as Windows-1252 (ftfy)."""
        fix_latin_ligatures: bool = True
        """``ﬁ`` -> ``fi``."""
        fix_character_width: bool | Literal["non_cjk"] = "non_cjk"
        """Full-width Latin -> ASCII (`ＦＵＬＬ` -> `FULL`), half-width kana -> full width;
        `"non_cjk"`: only in documents that have no Chinese, Japanese or Korean characters
        (after mojibake repair), `true`: in every document, `false`: never."""
        uncurl_quotes: bool = False
        """Curly quotes are kept (ftfy's default would straighten them)."""
        fix_line_breaks: bool = True
        """``\\r\\n`` and other line breaks -> ``\\n``."""
        fix_surrogates: bool = True
        """Join UTF-16 surrogate pairs; replace lone surrogates."""
        remove_control_chars: bool = True
        """Remove control characters other than tab and newline."""
        normalization: Literal["NFC", "NFKC", "NFD", "NFKD"] | None = "NFC"
        """`NFC`, `NFKC`, `NFD`, `NFKD` or `null`."""
        max_decode_length: PositiveInt = 1_000_000
        """Longest text segment (characters) ftfy decodes at once."""

        @model_validator(mode="after")
        def _nfkc_folds_width(self) -> Self:
            if self.normalization in ("NFKC", "NFKD") and self.fix_character_width == "non_cjk":
                # NFKC/NFKD themselves fold full-width forms; say so rather than half-promise.
                raise ValueError(f"normalization {self.normalization} folds full-width CJK "
                                 "punctuation to ASCII in every document; set "
                                 "fix_character_width: true to accept that, or use NFC")
            return self

    def setup(self) -> None:
        self.width = self.fix_character_width
        self.options = dict(
            fix_encoding=self.fix_encoding, unescape_html=self.unescape_html,
            remove_terminal_escapes=self.remove_terminal_escapes,
            restore_byte_a0=self.restore_byte_a0,
            replace_lossy_sequences=self.replace_lossy_sequences,
            decode_inconsistent_utf8=self.decode_inconsistent_utf8,
            fix_c1_controls=self.fix_c1_controls,
            fix_latin_ligatures=self.fix_latin_ligatures,
            fix_character_width=self.fix_character_width is not False,
            uncurl_quotes=self.uncurl_quotes, fix_line_breaks=self.fix_line_breaks,
            fix_surrogates=self.fix_surrogates, remove_control_chars=self.remove_control_chars,
            normalization=self.normalization, max_decode_length=self.max_decode_length,
        )

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        import ftfy

        config = ftfy.TextFixerConfig(explain=False, **self.options)  # type: ignore[arg-type]
        per_doc = self.width == "non_cjk"
        if per_doc:  # decided on the repaired text: mojibake of Chinese has no CJK in it yet
            config = config._replace(fix_character_width=False)
        fix, cjk, wide, narrow = ftfy.fix_text, CJK.search, _WIDTH.search, fix_character_width
        for doc in docs:
            text = doc.text
            if text.isascii() and "&" not in text and not _CTRL.search(text):
                yield doc  # fast path: clean ASCII has nothing ftfy would change
                continue
            fixed = fix(text, config)
            if per_doc and wide(fixed):
                if cjk(fixed):
                    ctx.count("fix_unicode:cjk_width_kept")
                else:
                    fixed = narrow(fixed)
            if fixed != text:
                ctx.count("fix_unicode:changed")
                doc.text = fixed
            if not doc.text:
                ctx.reject(doc, "fix_unicode:empty")
                continue
            yield doc
