"""The ground floor: documents, errors and secret masking, importing nothing from curator.

Everything else builds on these (storage, the core, the stages), so they live below both
``curator.storage`` and ``curator.core``: storage imports them without reaching up into the core.
"""
