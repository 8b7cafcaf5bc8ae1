"""Python-backend ``model.py`` files copied into an exported Triton repository.

They run inside Triton's python backend stub (the ``.venv-triton`` environment: numpy<2,
onnxruntime, tokenizers), never in curator's own process, so they import only those.
"""
