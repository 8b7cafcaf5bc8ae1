"""The old import path of :mod:`curator.base.errors`, the same module object under a second name.

Kept so that code written against ``curator.core.errors`` (custom stages, branches not merged
yet) keeps working and pickles naming it still load; new code imports ``curator.base.errors``.
"""

import sys

from curator.base import errors

sys.modules[__name__] = errors
