"""Storage, below the stages: atomic files, shard files, size caps, owned output folders.

Imports nothing from curator but ``curator.base`` (errors, documents, secret masking).
"""
