"""A shard's survey is a typed value whose JSON form (the runner's ``_surveys.json`` cache, read
back by a rerun) keeps its exact shape, so caches written before and after read the same."""

from __future__ import annotations

import orjson

from curator.io import schema


def test_survey_json_keeps_its_shape_and_reads_back_equal() -> None:
    """A field met first as a list and later as an object keeps ``items`` before ``fields``
    (the order its kinds were met); the JSON round trip gives the same survey and plan."""
    recs = [
        {"id": "a", "meta": [1, 2]},
        {"id": "b", "meta": {"x": 1.5}, "n": 3},
        {"id": "c", "meta": {"x": 2, "y": "s"}},
    ]
    s = schema.survey(recs)
    assert s.rows == 3 and dict(s.columns)["meta"].kinds == ("list", "dict")
    sizes = [len(orjson.dumps(r)) + 1 for r in recs]
    pos = [0, sizes[0], sizes[0] + sizes[1]]
    expected = {
        "rows": 3,
        "columns": {
            "id": {"kinds": ["str"]},
            "meta": {
                "kinds": ["list", "dict"],
                "items": {"kinds": ["int"]},
                "fields": {"x": {"kinds": ["float", "int"]}, "y": {"kinds": ["str"]}},
            },
            "n": {"kinds": ["int"]},
        },
        "first": {
            "id": 0,
            "meta": 0,
            "meta\x1f[]": 0,
            "meta\x1fx": pos[1],
            "n": pos[1],
            "meta\x1fy": pos[2],
        },
        "small": {
            "id": [0, sizes[0]],
            "meta": [0, sizes[0]],
            "meta\x1f[]": [0, sizes[0]],
            "meta\x1fx": [1, sizes[1]],
            "n": [1, sizes[1]],
            "meta\x1fy": [2, sizes[2]],
        },
    }
    got = s.to_json()
    assert orjson.dumps(got) == orjson.dumps(expected)  # same keys in the same order
    back = schema.Survey.from_json(orjson.loads(orjson.dumps(got)))
    assert back == s
    assert schema.plan([back, None], ["s0", "s1"], ["p0", "p1"], exemplars=True) == schema.plan(
        [s, None], ["s0", "s1"], ["p0", "p1"], exemplars=True
    )
