"""The public name of an input: nothing of a URL's user info, query or fragment survives, and
two inputs that differ only there keep distinct names."""

from __future__ import annotations

from curator.base.urls import distinct, public_basename, public_url


def test_user_info_query_and_fragment_are_dropped() -> None:
    url = "https://user:pw@host.example:8443/data/in.jsonl?X-Amz-Signature=abc&token=t#frag"
    assert public_url(url) == "https://host.example:8443/data/in.jsonl"
    assert public_basename(url) == "in.jsonl"


def test_local_paths_and_ipv6_hosts() -> None:
    assert public_url("data/in?.jsonl") == "data/in?.jsonl"
    assert public_url("file:///tmp/a.jsonl") == "file:///tmp/a.jsonl"
    assert public_url("http://u:p@[::1]:9000/a?sig=s") == "http://[::1]:9000/a"
    assert public_basename("data/sub/in.jsonl") == "in.jsonl"


def test_a_url_that_does_not_parse_still_loses_its_user_info_and_query() -> None:
    assert public_url("http://u:p@host:notaport/a.jsonl?token=secret") == "http://host/a.jsonl"
    assert public_url("http://u:p@[host/a.jsonl?token=secret#f") == "[host/a.jsonl"


def test_names_that_differ_only_in_the_query_stay_distinct_without_showing_it() -> None:
    originals = ["https://h/a.jsonl?token=one", "https://h/a.jsonl?token=two", "https://h/b.jsonl"]
    names = distinct([public_basename(o) for o in originals], originals)
    assert len(set(names)) == 3 and names[2] == "b.jsonl"
    assert all(n.startswith("a.jsonl#") and "one" not in n and "two" not in n for n in names[:2])
