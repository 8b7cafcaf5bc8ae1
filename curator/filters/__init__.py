"""Stage family 'filters'. Keep this file light: only the name -> 'module:Class' table."""

_H = "curator.filters.heuristics"

STAGES: dict[str, str] = {
    "fix_unicode": "curator.filters.fix_unicode:FixUnicode",
    "language_id": "curator.filters.language_id:LanguageId",
    "decontaminate": "curator.filters.decontaminate:Decontaminate",
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
    "word_count_filter": f"{_H}:WordCount",
    "mean_word_length_filter": f"{_H}:MeanWordLength",
    "symbol_word_ratio_filter": f"{_H}:SymbolWordRatio",
    "alpha_words_filter": f"{_H}:AlphaWords",
    "stop_words_filter": f"{_H}:StopWords",
    "long_word_filter": f"{_H}:LongWord",
    "bullet_lines_filter": f"{_H}:BulletLines",
    "ellipsis_lines_filter": f"{_H}:EllipsisLines",
    "line_punct_filter": f"{_H}:LinePunctuation",
    "short_lines_filter": f"{_H}:ShortLines",
    "char_dup_filter": f"{_H}:DuplicateLineChars",
    "newline_ratio_filter": f"{_H}:NewlineRatio",
    "punctuation_filter": f"{_H}:EndPunctuation",
    "boilerplate_filter": f"{_H}:Boilerplate",
    "non_alnum_filter": f"{_H}:NonAlphaNumeric",
    "numbers_filter": f"{_H}:NumbersRatio",
    "whitespace_filter": f"{_H}:WhitespaceRatio",
    "parentheses_filter": f"{_H}:ParenthesesRatio",
    "urls_filter": f"{_H}:UrlsRatio",
    "url_substrings_filter": f"{_H}:UrlSubstrings",
    "contains_filter": f"{_H}:ContainsString",
    "bad_words_filter": f"{_H}:BadWords",
    "dup_lines_filter": f"{_H}:DuplicateLines",
    "top_ngram_filter": f"{_H}:TopNgram",
    "dup_ngram_filter": f"{_H}:DuplicateNgrams",
}
