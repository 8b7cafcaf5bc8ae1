"""The progress line carries an ETA from the time per finished shard."""

from __future__ import annotations

import io

from curator.core.progress import Progress, format_seconds


def test_eta_from_time_per_shard():
    out = io.StringIO()
    p = Progress("s", stream=out, mode="log")
    p.start(10)
    assert p.eta() == "?"  # nothing finished yet: no estimate rather than a wrong one
    p.done = 4
    p.t0 -= 8.0  # 4 shards took 8 s: 6 left at 2 s each
    assert p.eta() in ("12s", "13s")
    p.done = 9
    p({"docs_in": 5})  # the last shard
    assert out.getvalue().rstrip().endswith("ETA 0s")


def test_format_seconds_units():
    assert [format_seconds(x) for x in (0.4, 59, 61, 3599, 3600 * 5 + 120, 86400 * 2 + 7200)] \
        == ["0s", "59s", "1m01s", "59m59s", "5h02m", "2d02h"]
