"""Stage family 'tokenize': tokenizer training, Megatron .bin/.idx shards and blending.
Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {
    "train_tokenizer": "curator.tokenize.train_tokenizer:TrainTokenizer",
    "megatron_shards": "curator.tokenize.megatron_shards:MegatronShards",
    "blend": "curator.tokenize.blend:Blend",
}

CLI = "curator.tokenize.cli"
