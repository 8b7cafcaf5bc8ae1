"""Reading and writing documents: JSONL (plain, gzip, zstd) and Parquet, through fsspec; Hugging
Face datasets (save_to_disk folders, the hub's Parquet layout, streaming)."""

STAGES: dict[str, str] = {
    "read_jsonl": "curator.io.jsonl:ReadJsonl",
    "write_jsonl": "curator.io.jsonl:WriteJsonl",
    "read_parquet": "curator.io.parquet:ReadParquet",
    "write_parquet": "curator.io.parquet:WriteParquet",
    "read_hf": "curator.io.read_hf:ReadHf",
    "write_hf": "curator.io.write_hf:WriteHf",
}
