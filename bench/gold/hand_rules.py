"""Gold main text built by hand for pages whose sources give no full gold text.

Each page of trafilatura's evaluation set (``tests/cache``/``tests/eval`` of adbar/trafilatura,
Apache-2.0) gets an explicit rule, written after reading the page: ``keep`` is an XPath whose
matches, in document order, hold the main text; ``drop`` is an XPath of parts inside them that
are not main text (share buttons, prices widgets, "add to cart", ratings UI...). The gold is the
text of what remains, one line per block element, checked by reading it. No extractor's output
is used. ``type`` is the page type, ``why`` says what a careful reader counts as main text.
"""

from __future__ import annotations

# file in adbar/trafilatura tests/eval (or tests/cache) -> rule
RULES: dict[str, dict[str, str]] = {
    "minusl.de.joghurt.html": {
        "type": "collection",
        "keep": "//div[@id='catHeadingAndText'] | //div[@id='productSlideInner']"
                "//span[@class='moreProductsName']",
        "drop": "//div[contains(@class,'product-slogan')]",
        "why": "category page: its heading and text, the notes on recipes, and the names of "
               "the products it lists; site menus, login boxes and the slogan are not",
    },
    "de.happycoffee.org.sidamo.html": {
        "type": "product",
        "keep": "//h1[@class='product_name'] | //div[contains(@class,'product_section')]"
                "//div[@class='description'] | //div[contains(@class,'product-')]"
                "/div[@class='section clearfix']/div[@class='description']",
        "drop": "",
        "why": "product name, the facts table (origin, processing, certificate) and the long "
               "description; cart, subscription widget, variant menu, customer reviews, "
               "promotional banners and the roast-chart pop-up are not",
    },
    "uniqz.de.katzendecke.html": {
        "type": "product",
        "keep": "//h1[@class='entry-title'] | //div[@class='wpsg_produkt_beschreibung']",
        "drop": "//div[@class='wpsg_produkt_beschreibung']/p[contains(., 'im Warenkorb')]",
        "why": "product name and description (material, embroidery); delivery time, variant "
               "menu, author box and sidebar lists of posts are not",
    },
    "mueritzurlauber.de.blockhaus.html": {
        "type": "service",
        "keep": "//article[@id='post-114']//h1 | //article[@id='post-114']"
                "/div[@class='entry-content']",
        "drop": "//div[contains(@class,'wpcf7')] | //table[contains(@class,'occupancy_aussen')]",
        "why": "holiday-house offer: name, description, prices, payment and cancellation "
               "terms; the booking form, availability calendar, sidebar contact box and "
               "privacy pop-up are not",
    },
    "trainingline-english.de.einzeltraining.html": {
        "type": "service",
        "keep": "//div[@id='cc-matrix-3593702226']",
        "drop": "",
        "why": "the offer's sections (how it works, why it works, for whom, packages); the "
               "sidebar address box and the customer quote column are not",
    },
    "ebrosia.de.zinfandel.html": {
        "type": "product",
        "keep": "//header[contains(@class,'product--header')]//h1 | //div[contains(@class,"
                "'tab--content')]/div[contains(@class,'content--description')]",
        "drop": "//div[contains(@class,'content--product-reviews')] | //div[contains(@class,"
                "'content--title')] | //a[starts-with(normalize-space(.), 'Weitere Artikel')]",
        "why": "wine name, description and the product facts table (producer, country, "
               "allergens); the buy box, wishlist alerts, reviews form and sliders of other "
               "wines are not",
    },
    "toralin.de.schmierfett.html": {
        "type": "product",
        "keep": "//div[@class='product-name']/h1 | //div[@id='product-tabs']"
                "//div[@class='panel']/div[@class='std']",
        "drop": "",
        "why": "product name and the description tab (use, effect, temperature range); the "
               "short description repeating it, cart, review form, related and up-sell "
               "sliders are not",
    },
    "de.induux.com.energiezaehler.html": {
        "type": "product",
        "keep": "//div[contains(@class,'col-md-8')][h1]/*[self::h1 or contains(@class,'ugc')]",
        "drop": "",
        "why": "product announcement of a manufacturer in a B2B catalogue: title and text; "
               "catalogue menus and contact boxes are not",
    },
}


def rule_gold(html: str, rule: dict[str, str]) -> str:
    """The text a rule marks: ``keep`` matches minus ``drop`` matches, a line per block."""
    import lxml.html

    tree = lxml.html.fromstring(html)
    for bad in tree.xpath("//script|//style|//noscript|//template"):
        bad.drop_tree()
    if rule.get("drop"):
        for el in tree.xpath(rule["drop"]):
            if el.getparent() is not None:
                el.drop_tree()
    blocks = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote",
              "tr", "dt", "dd", "figcaption", "table", "ul", "ol", "section", "article", "br",
              "td", "th"}
    out = []
    kept = tree.xpath(rule["keep"])
    # an element inside another kept one is already in its text
    ids = {id(e) for e in kept}
    for el in kept:
        if any(id(a) in ids for a in el.iterancestors()):
            continue
        for sub in el.iter():
            if isinstance(sub.tag, str) and sub.tag in blocks:
                sub.tail = "\ue000" + (sub.tail or "")
        out.append(el.text_content())
    # hard line breaks of the source inside a block are spaces; block ends are line ends
    text = "\ue000".join(out)
    return "\n".join(" ".join(line.split()) for line in text.split("\ue000") if line.strip())
