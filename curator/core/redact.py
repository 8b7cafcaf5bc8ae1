"""The old import path of :mod:`curator.base.redact`, the same module object under a second name.

Kept so that code written against ``curator.core.redact`` (custom stages, branches not merged
yet) keeps working and pickles naming it still load; new code imports ``curator.base.redact``.
"""

import sys

from curator.base import redact

sys.modules[__name__] = redact
