# Shim (curator tests): upstream's megatron/training/__init__.py imports the trainer, which needs
# triton and a GPU stack; preprocess_data.py only needs the tokenizer and argument modules below.
