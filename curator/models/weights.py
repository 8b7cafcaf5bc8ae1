"""What every model loader checks in a model folder's weights before a library reads them.

Two things made loaders fail with 92- and 102-line tracebacks that never named the file:
a ``model.safetensors`` cut short (a download or copy that stopped), and weights only in a
pickle (``pytorch_model.bin``), which transformers would unpickle (unpickling runs code).
Loaders refuse pickles by construction (``use_safetensors=True``); this module turns both
cases into one line naming the file, reading only a file's header (no torch needed).
"""

from __future__ import annotations

import json
import os
import re

#: Weight files that are pickles, as transformers and sentence-transformers name them.
_PICKLE = re.compile(r"^pytorch_model(-\d+-of-\d+)?\.bin$")
#: A safetensors header is a JSON object; real ones are kilobytes. Refused past this.
_MAX_HEADER = 100 << 20


def safetensors_problem(path: str) -> str | None:
    """Why the safetensors file ``path`` cannot be whole, or None: its header (an 8-byte
    length, then JSON naming each tensor's byte range) must describe exactly the file's
    size."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            n = int.from_bytes(head, "little") if len(head) == 8 else -1
            if n < 0 or n > min(size - 8, _MAX_HEADER):
                return (
                    f"'{path}' is cut short or not a safetensors file ({size} bytes; "
                    "its header does not fit in it): download or save it again"
                )
            meta = json.loads(f.read(n))
    except OSError as e:
        return f"'{path}' cannot be read: {e.strerror or e}"
    except ValueError:
        return f"'{path}' is damaged (its header is not JSON): download or save it again"
    try:
        end = max(
            (int(v["data_offsets"][1]) for k, v in meta.items() if k != "__metadata__"), default=0
        )
    except (AttributeError, TypeError, KeyError, IndexError, ValueError):
        return f"'{path}' is damaged (its header lists no byte ranges): download or save it again"
    if 8 + n + end != size:
        return (
            f"'{path}' is cut short or damaged: its header describes {8 + n + end} bytes, "
            f"the file holds {size}; download or save it again"
        )
    return None


def weights_problem(folder: str) -> str | None:
    """Why the weights of the model folder ``folder`` cannot be loaded, or None: in the folder
    and each subfolder (sentence-transformers keeps modules there), every ``.safetensors``
    file must be whole, and weights may not be pickles only."""
    dirs = [folder]
    try:
        dirs += sorted(
            os.path.join(folder, d)
            for d in os.listdir(folder)
            if os.path.isdir(os.path.join(folder, d)) and not d.startswith(".")
        )
    except OSError as e:
        return f"'{folder}' cannot be listed: {e.strerror or e}"
    for d in dirs:
        try:
            names = sorted(os.listdir(d))
        except OSError as e:
            return f"'{d}' cannot be listed: {e.strerror or e}"
        safe = [n for n in names if n.endswith(".safetensors")]
        for n in safe:
            why = safetensors_problem(os.path.join(d, n))
            if why:
                return why
        pickles = [n for n in names if _PICKLE.search(n)]
        if pickles and not safe:
            return (
                f"'{os.path.join(d, pickles[0])}' holds weights as a pickle, which curator "
                "does not load (unpickling can run code); save the model with "
                "save_pretrained(..., safe_serialization=True) to get model.safetensors"
            )
    return None
