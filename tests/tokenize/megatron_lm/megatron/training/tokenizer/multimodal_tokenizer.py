# Shim (curator tests): upstream imports llava; tokenizer.py only names these classes at import.


class MultimodalTokenizer:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("not vendored")
