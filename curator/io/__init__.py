"""Reading and writing documents: JSONL (plain, gzip, zstd) and Parquet, through fsspec."""

STAGES: dict[str, str] = {
    "read_jsonl": "curator.io.jsonl:ReadJsonl",
    "write_jsonl": "curator.io.jsonl:WriteJsonl",
    "read_parquet": "curator.io.parquet:ReadParquet",
    "write_parquet": "curator.io.parquet:WriteParquet",
}
