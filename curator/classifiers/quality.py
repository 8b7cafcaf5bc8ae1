"""fastText quality classifier: train high-quality reference text vs crawl text, then filter
the crawl with a threshold or GPT-3 style Pareto sampling.

Training (``train_quality_classifier``, also ``curator train-quality-classifier``) labels
documents by ``meta["source"]``: sources in ``positive_sources`` are ``__label__hq``, the rest
(or ``negative_sources``) ``__label__lq``. Each document goes to the held-out set by a hash of
its id, so the split does not depend on sharding. The model is saved under the stage's
artifact folder and published as the ``quality_model`` artifact, with held-out precision,
recall and accuracy in ``quality_metrics`` and the report.

Applying (``quality_filter``) writes ``meta["quality_score"]`` = P(hq) and keeps a document
when the score reaches ``threshold``, or, in ``pareto`` mode, when
``pareto(alpha) > 1 - score`` with a draw seeded by ``(seed, id)`` (Brown et al. 2020,
appendix A: alpha = 9), which keeps mostly high scores and some low ones.

This module holds the model helpers and training phases; the stages themselves are in
``train_quality_classifier.py`` and ``quality_filter.py``.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import random
import re
import shutil
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import xxhash

from curator.base.errors import InputError
from curator.storage.atomic import atomic_open

HQ, LQ = "__label__hq", "__label__lq"
_PUNCT = re.compile(r"([^\w\s])")
_SPACES = re.compile(r"\s+")
_MODELS: dict[str, Any] = {}


def normalize(text: str, max_chars: int = 20_000) -> str:
    """One line of lowercased text with punctuation split off (fastText input)."""
    t = _PUNCT.sub(r" \1 ", text[:max_chars].lower())
    return _SPACES.sub(" ", t).strip()


def holdout_unit(seed: int, key: str) -> float:
    """A uniform number in [0, 1) determined by ``(seed, key)``: a document is held out when
    it is below the held-out share, the same way in the stage, the CLI and quality_filter."""
    return xxhash.xxh64_intdigest(key.encode("utf-8", "surrogatepass"), seed=seed) / 2.0**64


def load_model(path: str) -> Any:
    """A fastText model, loaded once per process."""
    from curator.filters.language_id import load_fasttext

    return load_fasttext(path, "quality model")


#: Defaults that keep a model a few MB: rows = words + bucket, dim floats each
#: (bench/quality_model_size.py measures them against fastText's 2M x 64).
DEFAULT_BUCKET = 100_000
DEFAULT_DIM = 16
#: fastText's own ``bucket`` default for word n-grams: 2M rows x dim 64 x 4 bytes = 512 MB
#: whatever the amount of training data.
FASTTEXT_BUCKET = 2_000_000


_MALLOC_LOCK = threading.Lock()
_M_PERTURB = -6  # glibc mallopt parameter


@contextlib.contextmanager
def _zeroed_allocations() -> Iterator[None]:
    """Make malloc hand out zeroed memory while fastText builds its model.

    fastText initialises only the first tenth of its input matrix when ``thread`` < 10 and
    relies on the rest being zero; the ``fasttext-numpy2`` build allocates it uninitialised,
    so with a matrix small enough to come from reused heap memory (``bucket`` below a few
    hundred thousand) training read garbage: different models from the same seed, and
    "Encountered NaN" in about half the runs. glibc's ``M_PERTURB`` fills each new allocation
    with the complement of the given byte (0xFF -> zeros), restoring the upstream behaviour.
    Elsewhere than glibc this does nothing.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        yield
        return
    with _MALLOC_LOCK:
        mallopt(_M_PERTURB, 0xFF)
        try:
            yield
        finally:
            mallopt(_M_PERTURB, 0)


def train_fasttext(train_file: str, model_path: str, *, epoch: int = 5, lr: float = 0.5,
                   dim: int = 64, word_ngrams: int = 2, min_count: int = 1,
                   bucket: int = FASTTEXT_BUCKET, quantize: bool = False,
                   seed: int = 0) -> None:
    """Train a supervised fastText model on a ``__label__x text`` file; save it once,
    atomically (quantized in memory first when ``quantize``).

    ``word_ngrams >= 2`` also avoids fastText's "Encountered NaN" on small data sets. The
    input matrix has one row per word plus ``bucket`` rows for hashed n-grams, ``dim`` floats
    each; quantization (product quantization, 2 dimensions per byte, norms kept) divides
    that by about 8.
    """
    import fasttext

    with _zeroed_allocations():
        model = fasttext.train_supervised(
            input=train_file, epoch=epoch, lr=lr, dim=dim, wordNgrams=word_ngrams,
            minCount=min_count, bucket=bucket if word_ngrams > 1 else 0, thread=1, seed=seed,
            verbose=0, loss="softmax")
    if quantize:
        model.quantize(input=train_file, qnorm=True, retrain=False, thread=1, verbose=0)
    # fastText does not check its writes (a model cut short by a full disk "saves" and even
    # loads): the file must have the size the model implies before it is published (the
    # size of a quantized model's file is not derived here; it is small and read back later)
    from curator.storage.native import fasttext_model_size, save_checked

    save_checked(model.save_model, model_path, None if quantize else fasttext_model_size(model))


def hq_scores(model: Any, texts: list[str]) -> np.ndarray:
    """P(hq) of each normalized text, predicted in one C++ call."""
    from curator.filters.language_id import fasttext_predict

    labels, probs = fasttext_predict(model, texts, 2)
    out = np.zeros(len(texts))
    for i, (lab, p) in enumerate(zip(labels, probs)):
        for name, v in zip(lab, p):
            if name == HQ:
                out[i] = v
    return out


#: Score bins of the held-out ROC AUC: memory stays fixed however large the held-out set; two
#: scores closer than 1/AUC_BINS count as a tie (half a pair), the same as equal scores.
AUC_BINS = 1 << 16
#: The default ``min_auc``: below it a model barely ranks hq above other text (0.5 = chance).
MIN_AUC = 0.6


def binned_auc(pos: np.ndarray, neg: np.ndarray) -> float | None:
    """ROC AUC from per-bin counts of positive and negative scores: P(a positive scores above
    a negative) + half P(same bin) (the Mann-Whitney U statistic / (n_pos n_neg)); ``None``
    when either class is empty."""
    n_pos, n_neg = int(pos.sum()), int(neg.sum())
    if not n_pos or not n_neg:
        return None
    below = np.cumsum(neg) - neg  # negatives in lower bins
    u = float((pos * below).sum()) + 0.5 * float((pos * neg).sum())
    return u / (n_pos * n_neg)


@dataclass(frozen=True, kw_only=True)
class HoldoutMetrics:
    """How a model scored its held-out documents; :meth:`to_json` is the ``quality_metrics``
    artifact (and what ``curator train-quality-classifier`` prints)."""

    holdout_docs: int
    holdout_hq: int
    auc: float | None
    #: With a teacher's scores: Spearman's rho of P(hq) with them (``None``: undefined) over
    #: ``spearman_docs`` documents; without a teacher both are ``None`` and left out of JSON.
    spearman: float | None = None
    spearman_docs: int | None = None
    #: Of the hq label at P(hq) >= 0.5; ``None`` (and left out of JSON) with no held-out docs.
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    accuracy: float | None = None
    #: Held-out documents per tenth of P(hq), by gold label (empty with no held-out docs).
    score_hist_hq: tuple[int, ...] = ()
    score_hist_lq: tuple[int, ...] = ()
    #: Filled in by :func:`train_from_parts`: training lines per label, the model's size.
    train_hq: int = 0
    train_lq: int = 0
    model_bytes: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON form, keys in the order the report and earlier runs wrote them."""
        out: dict[str, Any] = {"holdout_docs": self.holdout_docs, "holdout_hq": self.holdout_hq}
        if self.spearman_docs is not None:
            out.update(spearman=self.spearman, spearman_docs=self.spearman_docs)
        out["auc"] = self.auc
        if self.holdout_docs:
            out.update(precision=self.precision, recall=self.recall, f1=self.f1,
                       accuracy=self.accuracy, score_hist_hq=list(self.score_hist_hq),
                       score_hist_lq=list(self.score_hist_lq))
        out.update(train_hq=self.train_hq, train_lq=self.train_lq, model_bytes=self.model_bytes)
        return out


@dataclass(frozen=True, kw_only=True)
class TrainedModel:
    """A trained quality model: its file, its size and its held-out metrics."""

    model: str
    model_bytes: int
    metrics: HoldoutMetrics


def check_auc(metrics: HoldoutMetrics, min_auc: float, holdout: float, what: str,
              holdout_key: str, sources: str, accept: str = "min_auc: 0") -> None:
    """Stop with one line when the held-out ROC AUC is below ``min_auc`` or cannot be
    computed (no held-out document of one label); ``min_auc <= 0`` accepts any model. A
    larger held-out share is suggested only when it would help, never the share that failed."""
    if min_auc <= 0:
        return
    auc = metrics.auc
    if auc is None:
        n, hq = metrics.holdout_docs, metrics.holdout_hq
        have = f"{hq} high-quality and {n - hq} other held-out documents"
        scarce = min(hq, n - hq)
        if holdout <= 0:
            fix = f"set {holdout_key} above 0"
        elif holdout < 0.5:
            # the share expected to give >= 20 documents of the scarcer label, > the one used
            need = min(0.5, max(holdout * 2, holdout * 20 / max(scarce, 1)))
            fix = f"raise {holdout_key} from {holdout:g} to {need:.2g}, or add documents"
        else:
            fix = "add documents of the missing label"
        raise InputError(f"{what}: held-out ROC AUC cannot be computed from {have} "
                         f"({sources}); {fix}, or set {accept} to accept the model unchecked")
    if auc < min_auc:
        raise InputError(f"{what}: held-out ROC AUC {auc:g} < min_auc {min_auc:g} "
                         f"({sources}): the model barely tells them apart; check the "
                         f"sources' labels and text, or set {accept} to accept it")


#: Held-out documents whose teacher score enters the Spearman correlation (the first ones of
#: the held-out file, a hash-chosen sample): two floats each, so memory stays bounded.
SPEARMAN_MAX = 1_000_000


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 0..n-1 with ties given their average rank (what Spearman's rho needs)."""
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x), dtype=np.float64)
    r[order] = np.arange(len(x), dtype=np.float64)
    _, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.bincount(inv, weights=r) / counts)[inv]


def spearman(a: np.ndarray, b: np.ndarray) -> float | None:
    """Spearman's rank correlation of two equal-length arrays (``None`` when either is
    constant or there are fewer than 3 values)."""
    if len(a) < 3:
        return None
    ra, rb = ranks(np.asarray(a, dtype=np.float64)), ranks(np.asarray(b, dtype=np.float64))
    ra -= ra.mean()
    rb -= rb.mean()
    den = float(np.sqrt((ra * ra).sum() * (rb * rb).sum()))
    return float((ra * rb).sum() / den) if den else None


def evaluate(model_path: str, holdout_file: str, threshold: float = 0.5,
             batch: int = 10_000, teacher_file: str | None = None) -> HoldoutMetrics:
    """Held-out precision/recall/F1 of the hq label and accuracy (streamed in batches); with
    ``teacher_file`` (one teacher score per held-out line) also the Spearman correlation of
    the model's P(hq) with the teacher's scores."""
    model = load_model(model_path)
    student: list[np.ndarray] = []
    kept = 0
    tp = fp = fn = tn = 0
    edges = np.linspace(0.0, 1.0, 11)
    hist = {HQ: np.zeros(10, dtype=np.int64), LQ: np.zeros(10, dtype=np.int64)}
    fine = {HQ: np.zeros(AUC_BINS, dtype=np.int64), LQ: np.zeros(AUC_BINS, dtype=np.int64)}

    def score(gold: list[bool], texts: list[str]) -> None:
        nonlocal tp, fp, fn, tn
        nonlocal kept
        scores = hq_scores(model, texts)
        if teacher_file and kept < SPEARMAN_MAX:
            student.append(scores[:SPEARMAN_MAX - kept])
            kept += len(student[-1])
        pred = scores >= threshold
        g = np.array(gold)
        hist[HQ] += np.histogram(scores[g], edges)[0]
        hist[LQ] += np.histogram(scores[~g], edges)[0]
        b = np.minimum((scores * AUC_BINS).astype(np.int64), AUC_BINS - 1)
        fine[HQ] += np.bincount(b[g], minlength=AUC_BINS)
        fine[LQ] += np.bincount(b[~g], minlength=AUC_BINS)
        tp += int((pred & g).sum())
        fp += int((pred & ~g).sum())
        fn += int((~pred & g).sum())
        tn += int((~pred & ~g).sum())

    gold: list[bool] = []
    texts: list[str] = []
    with open(holdout_file, encoding="utf-8") as f:
        for line in f:
            label, _, text = line.rstrip("\n").partition(" ")
            gold.append(label == HQ)
            texts.append(text)
            if len(texts) >= batch:
                score(gold, texts)
                gold, texts = [], []
    if texts:
        score(gold, texts)
    n = tp + fp + fn + tn
    if not n:
        return HoldoutMetrics(holdout_docs=0, holdout_hq=0, auc=None)
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    auc = binned_auc(fine[HQ], fine[LQ])
    rho, rho_docs = None, None
    if teacher_file:
        rho_docs = kept
        if kept:
            teacher = np.loadtxt(teacher_file, dtype=np.float64, ndmin=1, max_rows=kept)
            rho = spearman(np.concatenate(student), teacher[:kept])
    return HoldoutMetrics(
        holdout_docs=n, holdout_hq=tp + fn,
        spearman=None if rho is None else round(rho, 4), spearman_docs=rho_docs,
        auc=None if auc is None else round(auc, 4),
        precision=round(prec, 4), recall=round(rec, 4),
        f1=round(2 * prec * rec / (prec + rec), 4) if prec + rec else 0.0,
        accuracy=round((tp + tn) / n, 4),
        score_hist_hq=tuple(hist[HQ].tolist()), score_hist_lq=tuple(hist[LQ].tolist()))


def train_from_parts(train_parts: list[str], holdout_parts: list[str], out_dir: str, *,
                     epoch: int = 5, lr: float = 0.5, dim: int = DEFAULT_DIM,
                     word_ngrams: int = 2, min_count: int = 1, bucket: int = DEFAULT_BUCKET,
                     quantize: bool = False, seed: int = 0, balance: bool = True,
                     max_docs_per_label: int = 200_000,
                     teacher_parts: list[str] | None = None) -> TrainedModel:
    """Merge labelled line files, balance classes, train and evaluate; returns model path
    and metrics. Deterministic for a given seed and input. ``teacher_parts``: per held-out
    part, the teacher's score of each of its lines (for the Spearman correlation)."""
    # Index lines by (file, byte offset) per label: memory stays small however many
    # documents there are; only the sampled lines are read back.
    by_label: dict[str, list[tuple[int, int]]] = {HQ: [], LQ: []}
    for fi, p in enumerate(train_parts):
        with open(p, "rb") as f:
            pos = 0
            for line in f:
                by_label[line.split(b" ", 1)[0].decode()].append((fi, pos))
                pos += len(line)
    if not by_label[HQ] or not by_label[LQ]:
        raise InputError(f"quality classifier: need documents of both labels, got "
                         f"{len(by_label[HQ])} high-quality and {len(by_label[LQ])} other")
    rng = random.Random(seed)  # noqa: S311 - seeded sampling, not a secret
    cap = max_docs_per_label
    if balance:
        cap = min(cap, len(by_label[HQ]), len(by_label[LQ]))
    counts = {}
    chosen: list[tuple[int, int]] = []
    for lab in (HQ, LQ):
        items = by_label[lab]
        picked = rng.sample(items, cap) if len(items) > cap else items
        counts[lab] = len(picked)
        chosen.extend(picked)
    rng.shuffle(chosen)
    os.makedirs(out_dir, exist_ok=True)
    train_file = os.path.join(out_dir, "train.txt")
    handles = [open(p, "rb") for p in train_parts]  # noqa: SIM115
    try:
        with atomic_open(train_file, "wb") as out:
            for fi, pos in chosen:
                fh = handles[fi]
                fh.seek(pos)
                out.write(fh.readline())
    finally:
        for fh in handles:
            fh.close()
    holdout_file = os.path.join(out_dir, "holdout.txt")
    with atomic_open(holdout_file, "wb") as f:
        for p in holdout_parts:
            with open(p, "rb") as src:
                shutil.copyfileobj(src, f)
    teacher_file = None
    if teacher_parts is not None:
        teacher_file = os.path.join(out_dir, "holdout_teacher.txt")
        with atomic_open(teacher_file, "wb") as f:
            for p in teacher_parts:
                with open(p, "rb") as src:
                    shutil.copyfileobj(src, f)
    model_path = os.path.join(out_dir, "quality.ftz" if quantize else "quality.bin")
    train_fasttext(train_file, model_path, epoch=epoch, lr=lr, dim=dim,
                   word_ngrams=word_ngrams, min_count=min_count, bucket=bucket,
                   quantize=quantize, seed=seed)
    _MODELS.pop(model_path, None)
    from curator.filters import language_id

    language_id._MODELS.pop(model_path, None)  # a retrained file must be reloaded
    metrics = evaluate(model_path, holdout_file, teacher_file=teacher_file)
    size = os.path.getsize(model_path)
    return TrainedModel(model=model_path, model_bytes=size, metrics=replace(
        metrics, train_hq=counts[HQ], train_lq=counts[LQ], model_bytes=size))


def iter_jsonl_lines(paths: list[str]) -> Iterator[tuple[str, int, bytes]]:
    """(path, line number, line) of the non-blank lines of JSONL files, compressed or not,
    UTF-8 or UTF-16/32 by their BOM (for the CLI); a missing or undecodable file is one
    InputError naming it."""
    from curator.storage.atomic import open_compressed_read
    from curator.storage.encoding import utf8_stream

    for path in paths:
        try:
            with open_compressed_read(path) as raw:
                fh, _ = utf8_stream(raw)
                for i, line in enumerate(fh, 1):
                    if i == 1 and line.startswith(b"\xef\xbb\xbf"):
                        line = line[3:]
                    if line.strip():
                        yield path, i, line
        except FileNotFoundError:
            raise InputError(f"{path}: file not found") from None
        except UnicodeDecodeError as e:
            raise InputError(f"{path}: text not valid in its encoding: {e}") from None


def iter_jsonl_texts(paths: list[str], text_field: str) -> Iterator[tuple[str, str]]:
    """(id, text) of JSONL records (for the CLI); lines that are not JSON are skipped."""
    import orjson

    for path, i, line in iter_jsonl_lines(paths):
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        text = rec.get(text_field) if isinstance(rec, dict) else None
        if isinstance(text, str):
            yield str(rec.get("id", f"{path}:{i}")), text
