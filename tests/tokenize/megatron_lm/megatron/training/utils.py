# Shim (curator tests): the one function of megatron/training/utils.py that the legacy
# build_tokenizer uses (upstream's module imports the trainer). One process, so rank 0.


def print_rank_0(message, rank=None):
    """If distributed is initialized or rank is specified, print only on rank 0."""
    print(message, flush=True)
