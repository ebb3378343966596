"""Every table and figure of a written report has content: a table with a header and at least one row, a
figure that is a real PNG with more than a blank canvas (used by every recipe's report test)."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser

import numpy as np


class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self.images: list[str] = []
        self._in: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"caption": "", "headers": 0, "rows": 0})
        elif tag == "img":
            self.images.append(dict(attrs).get("src", ""))
        elif self.tables and tag == "th":
            self.tables[-1]["headers"] += 1
        elif self.tables and tag == "tr" and "tbody" in self._in:
            self.tables[-1]["rows"] += 1
        self._in.append(tag)

    def handle_endtag(self, tag):
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data):
        if self.tables and self._in and self._in[-1] == "caption":
            self.tables[-1]["caption"] += data


def assert_report_has_content(html: str, min_figures: int = 1) -> None:
    """Each table: a header row and at least one body row (the environment table has no header: a key/value
    list). Each figure: a decodable PNG with more than two colours (not an empty axis)."""
    from PIL import Image

    parsed = _Tables()
    parsed.feed(html)
    for t in parsed.tables:
        assert t["rows"] >= 1, f"empty table: {t['caption']!r}"
    assert len(parsed.images) >= min_figures, f"{len(parsed.images)} figures"
    for src in parsed.images:
        m = re.match(r"data:image/png;base64,(.*)", src, re.S)
        assert m, src[:60]
        img = Image.open(io.BytesIO(base64.b64decode(m.group(1)))).convert("RGB")
        colours = np.unique(np.asarray(img).reshape(-1, 3), axis=0)
        assert len(colours) > 2, "a blank figure"
