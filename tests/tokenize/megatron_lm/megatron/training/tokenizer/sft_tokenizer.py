# Shim (curator tests): upstream imports the SFT datasets; tokenizer.py only names this class.


class SFTTokenizer:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError("not vendored")
