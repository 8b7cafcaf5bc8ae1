"""Unicode repair with ftfy: mojibake, HTML entities, control characters, odd widths."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Literal

from curator.core.context import ShardContext
from curator.core.document import Document
from curator.core.stage import ShardStage

#: ASCII characters ftfy may change: controls other than tab/newline (\r included), DEL.
_CTRL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


class FixUnicode(ShardStage):
    """Repair broken Unicode with ftfy (fix_text); the options are ftfy's TextFixerConfig.
    Counts changed documents as ``fix_unicode:changed``."""

    name = "fix_unicode"

    def __init__(self, fix_encoding: bool = True, unescape_html: bool | Literal["auto"] = "auto",
                 remove_terminal_escapes: bool = True, restore_byte_a0: bool = True,
                 replace_lossy_sequences: bool = True, decode_inconsistent_utf8: bool = True,
                 fix_c1_controls: bool = True, fix_latin_ligatures: bool = True,
                 fix_character_width: bool = True, uncurl_quotes: bool = False,
                 fix_line_breaks: bool = True, fix_surrogates: bool = True,
                 remove_control_chars: bool = True,
                 normalization: Literal["NFC", "NFKC", "NFD", "NFKD"] | None = "NFC",
                 max_decode_length: int = 1_000_000) -> None:
        self.options = dict(
            fix_encoding=fix_encoding, unescape_html=unescape_html,
            remove_terminal_escapes=remove_terminal_escapes, restore_byte_a0=restore_byte_a0,
            replace_lossy_sequences=replace_lossy_sequences,
            decode_inconsistent_utf8=decode_inconsistent_utf8, fix_c1_controls=fix_c1_controls,
            fix_latin_ligatures=fix_latin_ligatures, fix_character_width=fix_character_width,
            uncurl_quotes=uncurl_quotes, fix_line_breaks=fix_line_breaks,
            fix_surrogates=fix_surrogates, remove_control_chars=remove_control_chars,
            normalization=normalization, max_decode_length=max_decode_length,
        )

    def process(self, docs: Iterator[Document], ctx: ShardContext) -> Iterator[Document]:
        import ftfy

        config = ftfy.TextFixerConfig(explain=False, **self.options)  # type: ignore[arg-type]
        fix = ftfy.fix_text
        for doc in docs:
            text = doc.text
            if text.isascii() and "&" not in text and not _CTRL.search(text):
                yield doc  # fast path: clean ASCII has nothing ftfy would change
                continue
            fixed = fix(text, config)
            if fixed != text:
                ctx.count("fix_unicode:changed")
                doc.text = fixed
            if not doc.text:
                ctx.reject(doc, "fix_unicode:empty")
                continue
            yield doc
