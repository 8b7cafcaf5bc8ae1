"""What a stage's result is keyed on beyond the files it opens: the folders it lists (a file
added to a globbed folder is never opened by the run that did not see it), the current
directory it resolved relative paths in, a module-level ``ctypes`` library handle (whose
address differs in every process), a file and a variable read through ctypes in the process's scope;
what it is not keyed on: a library's thread count. And a native-reads library that cannot be
loaded is not preloaded. Real processes through the ``curator`` command."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.core.test_trust_adversarial import _pipe, _setup, curator, fresh, kept, line

GLOBBED = """
import glob
import os

from curator import filter

HERE = os.path.dirname(__file__)


@filter
def glob_lim(doc) -> bool:
    lim = 0
    for path in sorted(glob.glob(os.path.join(HERE, "mydata", "parts", "*.txt"))):
        with open(path) as f:
            lim += int(f.read())
    return len(doc.text) < lim
"""

RELATIVE = """
from curator import filter


@filter
def cwd_lim(doc) -> bool:
    with open("mydata/lim.txt") as f:  # relative to the current directory
        return len(doc.text) < int(f.read())
"""

CTYPES = """
import ctypes

from curator import filter

libc = ctypes.CDLL("libc.so.6")


@filter
def c_lim(doc) -> bool:
    return libc.abs(-len(doc.text)) < 500
"""


def test_a_file_added_to_or_removed_from_a_folder_a_stage_lists_reruns_it(tmp_path):
    mods = _setup(tmp_path, GLOBBED, "globbed")
    parts = mods / "mydata" / "parts"
    parts.mkdir()
    (parts / "a.txt").write_text("300")
    (parts / "b.txt").write_text("200")
    _pipe(tmp_path, "globbed:glob_lim")
    curator(tmp_path, "run", "p.yaml")
    before = kept(tmp_path)
    assert "done" in line(curator(tmp_path, "status", "p.yaml"), "glob_lim")

    (parts / "c.txt").write_text("400")  # never opened by the run above
    st = curator(tmp_path, "status", "p.yaml")
    assert "stale" in line(st, "glob_lim") and "mydata/parts (files added" in st, st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path) > before
    assert "done" in line(curator(tmp_path, "status", "p.yaml"), "glob_lim")


def test_a_relative_path_read_from_another_current_directory_reruns_the_stage(tmp_path):
    _setup(tmp_path, RELATIVE, "relative")
    _pipe(tmp_path, "relative:cwd_lim")
    yaml = tmp_path / "p.yaml"
    yaml.write_text(yaml.read_text().replace("'data/", f"'{tmp_path}/data/"))
    here, there = tmp_path / "here", tmp_path / "there"
    for folder, lim in ((here, "300"), (there, "900")):
        (folder / "mydata").mkdir(parents=True)
        (folder / "mydata" / "lim.txt").write_text(lim)

    def run(cwd: Path, *args: str) -> str:
        return curator(tmp_path, *args, str(yaml), "--work-dir", str(tmp_path / "w"), cwd=cwd)

    run(here, "run")
    before = kept(tmp_path)
    assert "done" in line(run(here, "status"), "cwd_lim")
    st = run(there, "status")
    assert "stale" in line(st, "cwd_lim") and "current directory" in line(st, "cwd_lim"), st
    run(there, "run")
    shutil.copytree(tmp_path / "w", tmp_path / "keep")
    shutil.rmtree(tmp_path / "w")
    run(there, "run")  # a fresh run from there
    assert kept(tmp_path, "keep") == kept(tmp_path) > before


def test_a_module_level_ctypes_library_does_not_rerun_its_stage(tmp_path):
    _setup(tmp_path, CTYPES, "clib")
    _pipe(tmp_path, "clib:c_lim")
    curator(tmp_path, "run", "p.yaml")
    st = curator(tmp_path, "status", "p.yaml")
    assert "done" in line(st, "c_lim"), st  # the handle's address changed; its library did not


TOKENS = """
from tokenizers import Tokenizer, models, pre_tokenizers

from curator import filter

TOK = Tokenizer(models.WordLevel({"[UNK]": 0, "x": 1}, unk_token="[UNK]"))
TOK.pre_tokenizer = pre_tokenizers.Whitespace()


@filter
def few_tokens(doc) -> bool:
    # encode_batch asks the Rust library whether to run in parallel: it reads the variable
    return len(TOK.encode_batch([doc.text, doc.text])[0].ids) < 2
"""


def test_a_thread_count_a_library_reads_reruns_nothing(tmp_path):
    _setup(tmp_path, TOKENS, "toks")
    _pipe(tmp_path, "toks:few_tokens")
    curator(tmp_path, "run", "p.yaml")
    out = curator(tmp_path, "status", "p.yaml", env={
        "TOKENIZERS_PARALLELISM": "false", "RAYON_NUM_THREADS": "1", "RAYON_RS_NUM_CPUS": "1"})
    assert "done" in line(out, "few_tokens"), out


def test_a_native_reads_library_that_cannot_be_loaded_is_not_preloaded(tmp_path):
    """A copy of the package whose library is truncated (as one unreadable by the user running
    a shared install): the command runs, untraced, with one note, and no loader error."""
    from curator.core.native_reads import library_path

    built = library_path()
    assert built is not None, "curator/core/_native_reads.c is not built: run scripts/setup.sh"
    src = Path(built).parents[2]
    shutil.copytree(
        src / "curator", tmp_path / "pkg" / "curator", ignore=shutil.ignore_patterns("__pycache__")
    )
    (tmp_path / "pkg" / "curator" / "core" / Path(built).name).write_bytes(b"")
    _setup(tmp_path, "", "empty")
    _pipe(tmp_path, "fix_unicode")
    out = curator(tmp_path, "status", "p.yaml",
                  env={"PYTHONPATH": str(tmp_path / "pkg"), "CURATOR_NATIVE_READS": None})
    assert "ld.so" not in out and "cannot be loaded" in out, out


LIBC = """
import ctypes
import os

from curator import filter

HERE = os.path.dirname(__file__)
libc = ctypes.CDLL(None)  # the process's scope: the preloaded fopen and getenv
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.fgets.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
libc.getenv.restype = ctypes.c_char_p


@filter
def libc_lim(doc) -> bool:
    fp = libc.fopen(os.path.join(HERE, "mydata", "lim.txt").encode(), b"r")
    buf = ctypes.create_string_buffer(64)
    libc.fgets(buf, 64, fp)
    libc.fclose(fp)
    return len(doc.text) < int(buf.value) + int(libc.getenv(b"LIBC_ADD") or b"0")
"""


def test_a_file_and_a_variable_read_through_ctypes_are_part_of_the_key(tmp_path):
    mods = _setup(tmp_path, LIBC, "libcmod")
    _pipe(tmp_path, "libcmod:libc_lim")
    curator(tmp_path, "run", "p.yaml")
    before = kept(tmp_path)
    assert "done" in line(curator(tmp_path, "status", "p.yaml"), "libc_lim")
    (mods / "mydata" / "lim.txt").write_text("900")
    st = curator(tmp_path, "status", "p.yaml")
    assert "stale" in line(st, "libc_lim") and "lim.txt" in line(st, "libc_lim"), st
    curator(tmp_path, "run", "p.yaml")
    assert kept(tmp_path) == fresh(tmp_path) > before
    st = curator(tmp_path, "status", "p.yaml", env={"LIBC_ADD": "100"})
    assert "environment variable LIBC_ADD" in line(st, "libc_lim"), st
