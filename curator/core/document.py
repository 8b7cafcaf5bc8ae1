"""The old import path of :mod:`curator.base.document`, the same module object under a second name.

Kept so that code written against ``curator.core.document`` (custom stages, branches not merged
yet) keeps working and pickles naming it still load; new code imports ``curator.base.document``.
"""

import sys

from curator.base import document

sys.modules[__name__] = document
