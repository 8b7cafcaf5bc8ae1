"""A model folder whose weights are cut short or only a pickle is one line naming the file, in
every loader (model_classifier, semantic_dedup's torch, static and fast backends), and no
loader ever unpickles weights, even when the folder changes after it was checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from curator.base.errors import ConfigError
from curator.models import embed, hf, weights
from curator.models.tiny import build_classifier
from tests.dedup.helpers_semantic import build_tiny_model
from tests.helpers import run_cli


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    """A classifier and a sentence-transformers folder, each also cut short (half its
    model.safetensors) and as a pickle only (pytorch_model.bin, no safetensors)."""
    import safetensors.torch
    import torch

    root = tmp_path_factory.mktemp("models")
    texts = ["the cat sat on the mat", "a dog ran in the park", "hello there world"] * 4
    good = {
        "cls": Path(build_classifier(str(root / "cls"), texts)),
        "st": build_tiny_model(root / "st"),
    }
    out: dict[str, Path] = {}
    for name, src in good.items():
        cut, pickle = root / f"{name}_cut", root / f"{name}_pickle"
        shutil.copytree(src, cut)
        shutil.copytree(src, pickle)
        f = cut / "model.safetensors"
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])
        state = safetensors.torch.load_file(str(pickle / "model.safetensors"))
        torch.save(state, pickle / "pytorch_model.bin")
        (pickle / "model.safetensors").unlink()
        out |= {name: src, f"{name}_cut": cut, f"{name}_pickle": pickle}
    return out


def _cut(path: Path) -> str:
    return f"'{path / 'model.safetensors'}' is cut short or damaged"


def _pickle(path: Path) -> str:
    return f"'{path / 'pytorch_model.bin'}' holds weights as a pickle"


def test_curator_run_names_the_file_in_one_line(tmp_path: Path, folders) -> None:
    """model_classifier used to stop with `SafetensorError: Error while deserializing header:
    incomplete metadata` (no file named) and to load the pickle; semantic_dedup printed a
    93-line traceback for the cut file and loaded the pickle too."""
    (tmp_path / "in.jsonl").write_text(
        "".join(json.dumps({"id": str(i), "text": f"the cat sat {i}"}) + "\n" for i in range(4))
    )
    cases = [
        ("model_classifier", "cls_cut", _cut),
        ("model_classifier", "cls_pickle", _pickle),
        ("semantic_dedup", "st_cut", _cut),
        ("semantic_dedup", "st_pickle", _pickle),
    ]
    for stage, name, expect in cases:
        (tmp_path / "p.yaml").write_text(
            f"name: m\nwork_dir: w\nstages:\n  - read_jsonl: {{paths: in.jsonl}}\n"
            f"  - {stage}: {{model: '{folders[name]}'}}\n"
        )
        r = run_cli("run", "p.yaml", cwd=tmp_path, check=False)
        lines = r.stderr.strip().splitlines()
        assert r.returncode != 0 and len(lines) == 1, (name, r.stderr[-3000:])
        assert lines[0].startswith(
            f"curator: error: p.yaml:5: stages[1].{stage}.model: {expect(folders[name])}"
        ), (name, lines[0])


@pytest.mark.parametrize("backend", ["torch", "static", "fast"])
def test_every_semantic_backend_checks_the_weights(tmp_path: Path, folders, backend) -> None:
    for name, expect in (("st_cut", _cut), ("st_pickle", _pickle)):
        with pytest.raises(ValueError) as e:
            embed.load_encoder(
                str(folders[name]), backend=backend, cache_dir=str(tmp_path / "cache")
            )
        assert expect(folders[name]) in str(e.value)


def test_no_loader_unpickles_even_when_the_check_is_bypassed(monkeypatch, folders) -> None:
    """By construction, not by the check: with ``weights_problem`` made to see nothing (a
    folder swapped after it was checked), the pickle-only folders still fail in one line and
    ``torch.load`` is never called (loaders ask for safetensors only)."""
    import torch

    def no_unpickling(*a, **k):
        raise AssertionError("torch.load called on a model folder")

    monkeypatch.setattr(weights, "weights_problem", lambda folder: None)
    monkeypatch.setattr(hf, "weights_problem", lambda folder: None)
    monkeypatch.setattr(embed, "weights_problem", lambda folder: None)
    monkeypatch.setattr(torch, "load", no_unpickling)
    hf._CACHE.clear()
    with pytest.raises(ConfigError) as e:
        hf.load_classifier(str(folders["cls_pickle"]), key="model_classifier.model", device="cpu")
    assert str(e.value).startswith("model_classifier.model: cannot load") and "\n" not in str(
        e.value
    )
    with pytest.raises(ValueError) as e2:
        embed.load_encoder(str(folders["st_pickle"]), backend="torch")
    assert "could not be loaded" in str(e2.value)


def test_good_folders_still_load(folders) -> None:
    assert weights.weights_problem(str(folders["cls"])) is None
    assert weights.weights_problem(str(folders["st"])) is None
    hf._CACHE.clear()
    m = hf.load_classifier(str(folders["cls"]), key="model_classifier.model", device="cpu")
    assert m.kind == "regression"
    assert embed.load_encoder(str(folders["st"]), backend="torch").dim == 32
