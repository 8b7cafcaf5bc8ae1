"""Stage family 'filters'. Keep this file light: only the name -> 'module:Class' table."""

_H = "curator.filters.heuristics"

STAGES: dict[str, str] = {
    "fix_unicode": "curator.filters.unicode:FixUnicode",
    "language_id": "curator.filters.langid:LanguageId",
    "decontaminate": "curator.filters.decontam:Decontaminate",
    "pii_redact": "curator.filters.pii_redact:PiiRedact",
    "quality_buckets": "curator.filters.quality_buckets:QualityBuckets",
    "select": "curator.filters.select:Select",
    # presets: many rules, one line
    "gopher_quality": f"{_H}:GopherQuality",
    "gopher_repetition": f"{_H}:GopherRepetition",
    "fineweb_quality": f"{_H}:FineWebQuality",
    "nemo_english": f"{_H}:NemoEnglish",
    "c4_quality": f"{_H}:C4Quality",
    # single rules
    **{f"{key}_filter": f"{_H}:{cls}" for key, cls in (
        ("word_count", "WordCount"), ("mean_word_length", "MeanWordLength"),
        ("symbol_word_ratio", "SymbolWordRatio"), ("alpha_words", "AlphaWords"),
        ("stop_words", "StopWords"), ("long_word", "LongWord"),
        ("bullet_lines", "BulletLines"), ("ellipsis_lines", "EllipsisLines"),
        ("line_punct", "LinePunctuation"), ("short_lines", "ShortLines"),
        ("char_dup", "DuplicateLineChars"), ("newline_ratio", "NewlineRatio"),
        ("punctuation", "EndPunctuation"), ("boilerplate", "Boilerplate"),
        ("non_alnum", "NonAlphaNumeric"), ("numbers", "NumbersRatio"),
        ("whitespace", "WhitespaceRatio"), ("parentheses", "ParenthesesRatio"),
        ("urls", "UrlsRatio"), ("url_substrings", "UrlSubstrings"),
        ("contains", "ContainsString"), ("bad_words", "BadWords"),
        ("dup_lines", "DuplicateLines"),
        ("top_ngram", "TopNgram"), ("dup_ngram", "DuplicateNgrams"),
    )},
}
