"""curator's extraction fast path: trafilatura's algorithm, derived from its source, in
curator's own modules.

Derived from trafilatura 2.3.1 (https://github.com/adbar/trafilatura), Copyright
2019-present, Adrien Barbaresi and contributors, licensed under the Apache License 2.0
(LICENSE-trafilatura.txt in this folder), and from jusText 3.0.2's ``classify_paragraphs``
(https://github.com/miso-belica/jusText), Copyright (c) 2011 Jan Pomikalek and 2013 Michal
Belica, BSD 2-Clause licence (LICENSE-justext.txt). Each derived module says which file it
comes from. trafilatura's and jusText's own modules are imported for everything kept as it is
(element handlers, tag conversion, baseline, text output, readability, jusText's paragraph
maker) and never changed: nothing here assigns into them, so other code in the same process
that calls ``trafilatura.extract`` gets trafilatura as it ships
(tests/extract/test_fastpath_isolation.py).

What differs from trafilatura 2.3.1, each change giving the same text
(tests/extract/test_fastpath_gold.py: the same text as the earlier run-time patched
trafilatura on every gold page, six option sets; per-function equality tests name below):

* ``utils.load_html``: curator's own parser with element classes chosen by a C-level tag table
  (trafilatura's parser object is left alone); the HTML repair scans the page for illegal
  characters with C loops and rebuilds it only when it must (test_repair.py).
* ``htmlprocessing.tree_cleaning``: its per-tag deletion loop walks only for the tags the page
  has (test_cleaning.py); ``link_density_test`` walks descendants in C and its loop
  (``delete_by_link_density``) reads each link's text once (test_link_density.py).
* ``xpaths``: the regex XPath lists (``OVERALL_DISCARD_XPATH``, ``BODY_XPATH``, the raw-tree and
  comment prunes, the image-caption and teaser prunes) evaluated in Python over a C tag walk,
  their text vendored (test_discard.py, test_body_xpath.py: same elements, same order).
* ``external``: jusText's ``classify_paragraphs`` reading each paragraph's text once
  (test_justext_classify.py); curator's own copy of the all-languages stop list.
* ``core``: plain-text output for a tree curator parsed and never reads again (no defensive
  copy); the pre-conversion backup tree made only where it is read (test_fastpath.py); a
  ``fast=False`` rerun continues from the fast pass's state instead of parsing and pruning
  again (``Stash``, test_resume.py). Metadata, language filtering, deduplication and output
  formats other than text are not part of this path (curator asks for none of them).
"""

from curator.extract.fastpath.core import KEY_FIELDS, Stash, extract, rerun
from curator.extract.fastpath.utils import load_html

__all__ = ["KEY_FIELDS", "Stash", "extract", "load_html", "rerun"]
