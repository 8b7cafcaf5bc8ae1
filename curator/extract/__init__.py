"""Stage family 'extract'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {
    "extract_html": "curator.extract.extract_html:ExtractHtml",
    "url_blocklist": "curator.extract.url_blocklist:UrlBlocklist",
}
