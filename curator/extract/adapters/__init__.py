"""One module per extractor behind :func:`curator.extract.extract_html.extract_text`: each
turns a page's HTML into its main text with that extractor's options."""
