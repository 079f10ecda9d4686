"""`ComparePanel`: two rows side by side, the words that differ highlighted.

The word diff is the engine's (`engine.review.diff.word_diff`); this only turns its spans
into HTML. Highlight colours are translucent so they read on light and dark palettes.
"""

from __future__ import annotations

import html

from PySide6.QtWidgets import QGridLayout, QLabel, QTextBrowser, QWidget

from engine.review.diff import Span, word_diff

HIGHLIGHT = "rgba(230, 160, 30, 0.45)"


def spans_html(spans: list[Span]) -> str:
    parts = []
    for span in spans:
        text = html.escape(span.text)
        if span.changed:
            stripped = text.rstrip()
            trail = text[len(stripped):]
            parts.append(f'<span style="background-color: {HIGHLIGHT};">{stripped}</span>'
                         f"{trail}")
        else:
            parts.append(text)
    return "".join(parts).replace("\n", "<br>")


class ComparePanel(QWidget):
    """Left and right row with titles; `show_pair` fills both."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.left_title = QLabel("", self)
        self.right_title = QLabel("", self)
        self.left = QTextBrowser(self)
        self.right = QTextBrowser(self)
        for view in (self.left, self.right):
            view.setOpenLinks(False)
            view.setMinimumHeight(60)
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.left_title, 0, 0)
        layout.addWidget(self.right_title, 0, 1)
        layout.addWidget(self.left, 1, 0)
        layout.addWidget(self.right, 1, 1)
        self.clear()

    def clear(self, placeholder: str = "") -> None:
        """Empty both sides, `placeholder` in the left title. Each mode says its own: the
        clusters ask for a member, Ask me and Measure quality say that pairs are being found
        (one placeholder for all asked for a member where there is none to select)."""
        self.left_title.setText(placeholder)
        self.right_title.setText("")
        self.left.clear()
        self.right.clear()

    def show_pair(self, left_title: str, left_text: str, right_title: str, right_text: str
                  ) -> None:
        a, b = word_diff(left_text, right_text)
        self.left_title.setText(left_title)
        self.right_title.setText(right_title)
        self.left.setHtml(spans_html(a))
        self.right.setHtml(spans_html(b))
