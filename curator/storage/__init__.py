"""Storage, below the stages: atomic files, shard files, size caps, owned output folders.

Imports nothing from curator but ``curator.core.errors`` and ``curator.core.document``.
"""
