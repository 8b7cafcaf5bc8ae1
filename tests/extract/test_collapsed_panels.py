"""``collapsed_panels`` (curator/extract/prune_ui.py): the elements a page names in an
``aria-controls`` (accordion answers, tab panels) are read although they are hidden until a
click; every other hidden element is still dropped. Real page: bench/gold tuning (WCXB)."""

from __future__ import annotations

import pytest

from bench.gold_set import prf
from curator.base.errors import ConfigError
from curator.extract.extract_html import ExtractHtml, extract_text
from tests.extract.helpers_extract import tuning_pages as _tuning

ANSWER = ("Unlike with health insurance for humans, there are no networks or copays for pet "
          "insurance.")


def test_faq_answers_of_a_real_service_page_are_kept() -> None:
    """wcxb/4911 (Progressive's pet insurance page): its FAQ answers sit in
    ``aria-hidden="true"`` accordion panels, which trafilatura drops as hidden; the gold, like
    a reader who opens them, has them. F1 0.55 -> 0.94."""
    page = _tuning()["wcxb/4911"]
    old = extract_text(page.html, collapsed_panels=False)
    new = extract_text(page.html)
    assert ANSWER not in old
    assert ANSWER in new
    assert prf(old, page.gold)[2] < 0.6
    assert prf(new, page.gold)[2] > 0.9


PAGE = """<html><body><main><h1>Plans and prices</h1>
<p>We compare the plans of every insurer in the country so that you do not have to read all
of their brochures yourself, and we tell you which one suits your dog or your cat best.</p>
<p>Our advice is free, and it is independent of every insurer whose plans we compare here.</p>
<h2>Questions</h2>
<button aria-expanded="false" aria-controls="a1 a2">How much does it cost?</button>
<div id="a1" aria-hidden="true"><p>The premium depends on the age and the breed of the pet,
and on where you live; most owners pay between twenty and fifty dollars a month.</p></div>
<div id="a2" style="display:none"><p>Older pets cost more to insure, because they are more
often ill and their treatment is longer; some insurers do not take pets older than fourteen
years.</p></div>
<div role="tabpanel" id="t1" style="color: red; display: none"><p>Accidents are covered from
the first day, illnesses after a waiting period of fourteen days, as the contract says.</p>
</div>
<button aria-controls="t1">Coverage</button>
<div id="popup" aria-hidden="true"><p>Sign up for our newsletter and get a discount code for
your first month, sent to your inbox within minutes, no strings attached at all.</p></div>
</main></body></html>"""


@pytest.mark.parametrize("words", ["twenty and fifty dollars", "fourteen years",
                                   "waiting period of fourteen days"])
def test_panels_named_by_aria_controls_are_read(words: str) -> None:
    """Hidden by ``aria-hidden`` and by ``display:none``; one ``aria-controls``
    may name several panels, and the control may come after its panel."""
    assert words in extract_text(PAGE)
    assert words not in extract_text(PAGE, collapsed_panels=False)


def test_hidden_elements_nothing_controls_stay_dropped() -> None:
    assert "newsletter" not in extract_text(PAGE)
    assert "Plans and prices" in extract_text(PAGE)


def test_pages_without_aria_controls_are_unchanged() -> None:
    """Every 10th tuning page without an ``aria-controls`` comes out exactly as with the option
    off (the step is skipped on a substring test)."""
    pages = [p for p in _tuning().values() if "aria-controls" not in p.html][::10]
    assert len(pages) >= 15
    for page in pages:
        assert extract_text(page.html) == extract_text(page.html, collapsed_panels=False)


def test_stage_parameter() -> None:
    assert ExtractHtml(collapsed_panels=False).options["collapsed_panels"] is False
    with pytest.raises(ConfigError):
        ExtractHtml(collapsed_panels="sometimes")
