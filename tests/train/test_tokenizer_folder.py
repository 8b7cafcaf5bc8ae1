"""``curator train`` reads the tokenizer folder as Megatron-LM's HuggingFaceTokenizer does: the
EOS it declares must be the ``eod_id`` the shards of ``blend.json`` were written with."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tokenizers import Tokenizer, models, pre_tokenizers

from curator.base.errors import InputError
from curator.tokenize import megatron
from curator.tokenize.hf_folder import special_token_roles, write_hf_config
from curator.train.blend import load_blend


def _setup(tmp_path, declared: str | None, eod_id: int):
    tok = tmp_path / "tok"
    tok.mkdir()
    t = Tokenizer(models.WordLevel({"[UNK]": 0, "<|endoftext|>": 1, "</s>": 2, "a": 3},
                                   unk_token="[UNK]"))
    t.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    t.add_special_tokens(["<|endoftext|>", "</s>"])
    t.save(str(tok / "tokenizer.json"))
    if declared:
        write_hf_config(str(tok), special_token_roles(["<|endoftext|>", "</s>"], declared))
    w = megatron.IndexedWriter(str(tmp_path / "web_text_document"), np.uint16)
    w.add_batch(np.array([3, 3, eod_id]), np.array([3]), np.array([1]))
    w.close()
    blend = tmp_path / "blend.json"
    blend.write_text(json.dumps({
        "data_prefix": [1.0, str(tmp_path / "web_text_document")], "split": "100,0,0",
        "tokenizer": {"type": "huggingface", "path": str(tok / "tokenizer.json"),
                      "vocab_size": 4, "eod_id": eod_id}}))
    return str(blend)


def test_blend_whose_eod_is_not_the_folder_eos_is_refused(tmp_path):
    blend = _setup(tmp_path, "</s>", 1)
    with pytest.raises(InputError, match=r"eod_id 1 is not the eos_token '</s>' \(id 2\)"):
        load_blend(blend)


@pytest.mark.parametrize("declared", ["<|endoftext|>", None])
def test_blend_agreeing_with_the_folder_or_a_bare_tokenizer_json_loads(tmp_path, declared):
    b = load_blend(_setup(tmp_path, declared, 1))
    assert b.eod_id == 1
