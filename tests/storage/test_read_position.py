"""curator.storage.read_position: the fraction of its input a shard has read, for the ETA;
only the watching thread's reads count."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from curator.storage import read_position


@pytest.fixture
def pos() -> Iterator[read_position.ReadPosition]:
    """This thread's reads watched, as a shard task's heartbeat watches them."""
    p, prev = read_position.watch()
    yield p
    read_position.unwatch(p, prev)


def test_fraction_follows_the_tracked_handle(tmp_path, pos):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    with open(path, "rb") as fh:
        read_position.track(fh)
        assert pos.fraction() == 0.0
        fh.read(250)
        assert pos.fraction() == 0.25
        fh.seek(0, 2)
        assert pos.fraction() == 1.0
    assert pos.fraction() is None  # closed: unknown, not an error


def test_a_byte_range_is_its_own_whole(tmp_path, pos):
    path = tmp_path / "f"
    path.write_bytes(b"x" * 1000)
    with open(path, "rb") as fh:
        read_position.track(fh, end=600, start=200)
        fh.seek(400)
        assert pos.fraction() == 0.5


def test_unwatched_threads_and_empty_files_count_nothing(tmp_path, pos):
    (tmp_path / "empty").write_bytes(b"")
    seen = []

    def other() -> None:  # another thread's reads are not this shard's
        with open(tmp_path / "empty", "rb") as fh:
            read_position.track(fh)
        read_position.count_doc()
        seen.append(True)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen and pos.fh is None and pos.docs == 0
    with open(tmp_path / "empty", "rb") as fh:
        read_position.track(fh)
        assert pos.fraction() is None  # size 0: unknown


def test_tracking_unwatched_is_a_no_op():
    read_position.track(object())  # no heartbeat in this thread: nothing is asked of it
    read_position.count_doc()
