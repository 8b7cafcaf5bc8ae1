"""curator.storage.sealed: a phase result is unpickled only when its HMAC verifies under this
work_dir's private key, for the place it was written to."""

from __future__ import annotations

import os
import pickle
import stat

import pytest

from curator.storage import sealed


def test_a_sealed_object_reads_back(tmp_path):
    key = sealed.work_dir_key(str(tmp_path))
    sealed.dump(str(tmp_path / "r.pkl"), {"a": [1, 2.5, "x"]}, key, "stage/phase")
    assert sealed.load(str(tmp_path / "r.pkl"), key, "stage/phase") == {"a": [1, 2.5, "x"]}


def test_the_key_is_private_and_stable(tmp_path):
    key = sealed.work_dir_key(str(tmp_path))
    st = os.stat(tmp_path / sealed.KEY_NAME)
    assert len(key) == 32 and stat.S_IMODE(st.st_mode) == 0o600
    assert sealed.work_dir_key(str(tmp_path)) == key


def test_a_key_others_can_read_is_replaced(tmp_path):
    key = sealed.work_dir_key(str(tmp_path))
    sealed.dump(str(tmp_path / "r.pkl"), 1, key)
    os.chmod(tmp_path / sealed.KEY_NAME, 0o644)
    new = sealed.work_dir_key(str(tmp_path))
    assert new != key
    with pytest.raises(sealed.Unsealed, match="HMAC"):  # made with the old key: recomputed
        sealed.load(str(tmp_path / "r.pkl"), new)


def test_a_symlinked_key_is_not_followed(tmp_path):
    (tmp_path / "elsewhere").write_bytes(b"k" * 32)
    os.symlink(tmp_path / "elsewhere", tmp_path / sealed.KEY_NAME)
    key = sealed.work_dir_key(str(tmp_path))
    assert key != b"k" * 32 and not os.path.islink(tmp_path / sealed.KEY_NAME)
    assert (tmp_path / "elsewhere").read_bytes() == b"k" * 32


@pytest.mark.parametrize("how", ["planted pickle", "changed byte", "other label", "other key"])
def test_an_untrusted_file_is_never_unpickled(tmp_path, how):
    key = sealed.work_dir_key(str(tmp_path))
    path = tmp_path / "r.pkl"
    sealed.dump(str(path), [1, 2, 3], key, "a")
    label, use = "a", key
    if how == "planted pickle":
        path.write_bytes(pickle.dumps([1, 2, 3]))
    elif how == "changed byte":
        raw = bytearray(path.read_bytes())
        raw[-2] ^= 1
        path.write_bytes(bytes(raw))
    elif how == "other label":
        label = "b"
    else:
        use = sealed.work_dir_key(str(tmp_path / "other"))
    with pytest.raises(sealed.Unsealed):
        sealed.load(str(path), use, label)
