"""curator.storage.nofollow: below a root, curator's own files are reached one component at a
time and no symlink is followed; a link met is one error naming the path. (Every writer of a
real run against planted links: tests/security/test_no_symlink_writes.py.)"""

from __future__ import annotations

import errno
import os

import pytest

from curator.storage import nofollow


@pytest.fixture
def root(tmp_path):
    r = tmp_path / "work"
    r.mkdir()
    nofollow.confine(str(r))
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep")
    return r, victim


def test_a_linked_folder_on_the_way_is_refused(root):
    r, victim = root
    os.symlink(victim, r / "stages")
    with pytest.raises(OSError) as e:
        nofollow.open_file(str(r / "stages" / "precious"), "wb")
    assert e.value.errno == errno.ELOOP and e.value.filename == str(r / "stages")
    with pytest.raises(OSError):
        nofollow.makedirs(str(r / "stages" / "new"))
    assert (victim / "precious").read_text() == "keep" and os.listdir(victim) == ["precious"]


def test_a_linked_file_is_neither_truncated_nor_replaced(root):
    r, victim = root
    os.symlink(victim / "precious", r / ".lock")
    with pytest.raises(OSError) as e:
        nofollow.open_file(str(r / ".lock"), "wb")
    assert e.value.filename == str(r / ".lock")
    (r / "tmp").write_text("new")
    with pytest.raises(OSError):
        nofollow.replace(str(r / "tmp"), str(r / ".lock"))
    assert (victim / "precious").read_text() == "keep"


def test_removing_a_link_removes_the_link_only(root):
    r, victim = root
    os.symlink(victim, r / "cache")
    nofollow.rmtree(str(r / "cache"))
    os.symlink(victim / "precious", r / "marker")
    nofollow.unlink(str(r / "marker"))
    assert not os.path.lexists(r / "cache") and not os.path.lexists(r / "marker")
    assert (victim / "precious").read_text() == "keep"
    (r / "d").mkdir()
    os.symlink(victim, r / "d" / "inside")
    nofollow.rmtree(str(r / "d"))  # a link inside the tree: removed as a link
    assert not (r / "d").exists() and (victim / "precious").read_text() == "keep"


def test_plain_paths_work_as_usual(root):
    r, _ = root
    with nofollow.open_file(str(r / "a" / "b" / "f.txt"), "w") as f:
        f.write("x")
    with nofollow.open_file(str(r / "a" / "b" / "f.txt"), "a") as f:
        f.write("y")
    assert (r / "a" / "b" / "f.txt").read_text() == "xy" and nofollow.exists(str(r / "a"))
    with pytest.raises(FileExistsError):
        nofollow.open_file(str(r / "a" / "b" / "f.txt"), "wb", exclusive=True)
    assert nofollow.root_of(str(r / "a" / "b")) == str(r)
    assert nofollow.root_of("/nowhere/else") is None
