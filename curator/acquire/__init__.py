"""Stage family 'acquire'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {
    "common_crawl": "curator.acquire.common_crawl:CommonCrawl",
    "read_warc": "curator.acquire.read_warc:ReadWarc",
    "cc_index": "curator.acquire.cc_index:CcIndex",
    "wikipedia": "curator.acquire.wikipedia:Wikipedia",
    "arxiv": "curator.acquire.arxiv:Arxiv",
}
