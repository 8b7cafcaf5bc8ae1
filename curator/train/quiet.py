"""megatron-core's import-time notices, not shown to curator's users.

Importing megatron-core without NVIDIA's Transformer Engine and Apex prints six to eight
``UserWarning``s ("Transformer Engine and Apex are not installed. Falling back to ...", "Apex
is not installed. Falling back to Torch Norm"). curator builds megatron-core's *local* layer
spec on purpose (it runs on CPUs and on GPUs without those packages), so the fallback is the
expected path, and on a first quick start these lines were the bulk of what a newcomer saw.
Only those messages from megatron's own modules are hidden, and only when the user set no
warning options: ``python -W default`` (or ``PYTHONWARNINGS``) shows them again.
"""

from __future__ import annotations

import sys
import warnings

_DONE = False


def megatron_notices_off() -> None:
    """Hide megatron-core's "Transformer Engine / Apex not installed" fallback notices
    (idempotent; nothing when the user set warning options)."""
    global _DONE
    if _DONE or sys.warnoptions:
        return
    _DONE = True
    warnings.filterwarnings("ignore", message=r"(Transformer Engine and )?Apex (is|are) not "
                            r"installed", category=UserWarning, module=r"megatron\.")
