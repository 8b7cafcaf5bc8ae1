"""The Hugging Face side of a tokenizer folder: ``tokenizer_config.json`` and
``special_tokens_map.json``, which say which token is EOS (Megatron's end of document), BOS,
PAD and UNK.

``tokenizer.json`` alone does not say it: ``AutoTokenizer.from_pretrained(folder)`` then has
``eos_token = None``, and Megatron-LM's ``--tokenizer-type HuggingFaceTokenizer
--append-eod`` appends ``None`` (a 0-byte ``.bin``, exit 0). So every BPE folder curator
writes declares its special tokens, and a folder curator reads is asked the same question
``transformers`` would answer.
"""

from __future__ import annotations

import json
import os
from typing import Any

from curator.base.errors import InputError
from curator.storage.atomic import atomic_open

CONFIG = "tokenizer_config.json"
SPECIAL_MAP = "special_tokens_map.json"

#: Token names recognised as a role when a BPE tokenizer lists them in ``special_tokens``
#: (EOS is the end-of-document token, chosen separately: ``eod_token``).
ROLE_NAMES: dict[str, tuple[str, ...]] = {
    "bos_token": ("<s>", "[BOS]", "<bos>", "<|begin_of_text|>", "<|startoftext|>"),
    "pad_token": ("<pad>", "[PAD]", "<|pad|>"),
    "unk_token": ("<unk>", "[UNK]", "<|unk|>"),
    "sep_token": ("[SEP]", "<sep>"),
    "cls_token": ("[CLS]", "<cls>"),
    "mask_token": ("[MASK]", "<mask>"),
}


def special_token_roles(special_tokens: list[str], eos: str | None) -> dict[str, Any]:
    """``{"eos_token": eos, "bos_token": ..., "additional_special_tokens": [...]}``: the roles
    of a BPE tokenizer's special tokens, by their names; the rest are additional."""
    roles: dict[str, Any] = {}
    if eos:
        roles["eos_token"] = eos
    for role, names in ROLE_NAMES.items():
        tok = next((t for t in names if t in special_tokens and t != eos), None)
        if tok is not None:
            roles[role] = tok
    named = set(roles.values())
    extra = [t for t in special_tokens if t not in named]
    if extra:
        roles["additional_special_tokens"] = extra
    return roles


def write_hf_config(out_dir: str, roles: dict[str, Any]) -> list[str]:
    """Write ``tokenizer_config.json`` and ``special_tokens_map.json`` next to a
    ``tokenizer.json`` (atomically), for ``AutoTokenizer`` (transformers 4 and 5) and
    Megatron-LM's ``HuggingFaceTokenizer``. No BOS/EOS is added when encoding: the
    tokenizer has no post-processor, and ``add_bos_token``/``add_eos_token`` say so."""
    config = {"tokenizer_class": "PreTrainedTokenizerFast", **roles,
              "add_bos_token": False, "add_eos_token": False,
              "clean_up_tokenization_spaces": False}
    paths = []
    for name, doc in ((CONFIG, config), (SPECIAL_MAP, roles)):
        path = os.path.join(out_dir, name)
        with atomic_open(path, "wb") as f:
            f.write((json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode())
        paths.append(path)
    return paths


def _token(value: Any) -> str | None:
    """A special token as written by transformers: a string or an AddedToken dict."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) and value else None


def declared_eos(folder: str) -> tuple[str | None, str | None]:
    """``(eos_token, file)``: the EOS token the folder's ``tokenizer_config.json`` or
    ``special_tokens_map.json`` declares, and where; ``(None, None)`` when neither does.
    Two files declaring different tokens is an error (which one transformers takes depends
    on its version)."""
    found: list[tuple[str, str]] = []
    for name in (CONFIG, SPECIAL_MAP):
        path = os.path.join(folder, name)
        if not os.path.exists(path):
            continue
        try:
            with open(path, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            raise InputError(f"{path}: not a JSON file: {e}") from None
        value = doc.get("eos_token") if isinstance(doc, dict) else None
        tok = _token(value)
        if value is not None and tok is None:
            raise InputError(f"{path}: eos_token {json.dumps(value)} is not a token")
        if tok is not None:
            found.append((tok, path))
    if not found:
        return None, None
    if len({t for t, _ in found}) > 1:
        raise InputError(f"{found[0][1]} declares eos_token '{found[0][0]}' but {found[1][1]} "
                         f"declares '{found[1][0]}'")
    return found[0]


def folder_files(folder: str) -> list[str]:
    """The tokenizer files of a folder that exist (what a run's identity should cover)."""
    names = ("tokenizer.json", CONFIG, SPECIAL_MAP, "tokenizer.model", "vocab.json",
             "merges.txt")
    return [os.path.join(folder, n) for n in names if os.path.exists(os.path.join(folder, n))]
