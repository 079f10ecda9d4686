"""`ComparePanel`: two rows side by side: the words that differ highlighted, or for long
documents the passages they share.

Two questions are compared word by word (`engine.review.diff.word_diff`; this only turns its
spans into HTML). Two documents differ in hundreds of words, and a word diff marks so many
that it says nothing; what the analyst asks of them is which parts of one are found in the
other. So when the pair's rows are given (`show_pair(..., rows=...)`) the panel asks for them
(`documentsWanted`, answered by the review controller off the GUI thread with
`project.documents.pair`) and, when at least one text was read in several windows, shows
the answer (`show_documents`): each matching passage in a colour of its own, the same on
both sides, the best one scrolled into view, and above the texts how much of each document
the other holds. Until the answer comes, and for two questions always, the word diff stays.
Highlight colours are translucent so they read on light and dark palettes.
"""

from __future__ import annotations

import html
import math
from typing import NamedTuple

from PySide6.QtCore import Signal
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import QGridLayout, QLabel, QSizePolicy, QTextBrowser, QWidget

from engine.review.calibration import format_threshold
from engine.review.diff import Span, word_diff
from engine.services.documents import DocumentPair

HIGHLIGHT = "rgba(230, 160, 30, 0.45)"
QWIDGETSIZE_MAX = (1 << 24) - 1   # Qt's "no maximum"
# One colour per matching passage, in turn (best passage first), the same on both sides;
# none is the word diff's amber, so a passage never reads as words that differ.
PASSAGE_COLOURS = ((66, 133, 244), (52, 168, 83), (171, 71, 188), (0, 172, 193),
                   (240, 98, 146), (141, 110, 99))
PASSAGE_ALPHA = 80


class Row(NamedTuple):
    """A side's row: its item id (what the documents are asked by) and the id the analyst
    knows it by (what the share line names)."""

    item_id: int
    name: str


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


def passage_colour(n: int) -> QColor:
    """The colour of the `n`-th passage (0: the best)."""
    red, green, blue = PASSAGE_COLOURS[n % len(PASSAGE_COLOURS)]
    return QColor(red, green, blue, PASSAGE_ALPHA)


def shares_line(pair: DocumentPair, left: str, right: str) -> str:
    """"B holds 100% of A · A holds 62% of B · 5 matching passages at 0.75 · 48% of
    5-word runs shared". Shares are rounded down: 100% only when all of a document is
    found in the other. The runs shared (MinHash's Jaccard, where both texts have a
    signature) are the other signal: a copy with words edited throughout can share few
    passages at the threshold and still most of its runs, and the similarity then comes
    from them."""
    count = len(pair.passages)
    passages = (f"{count:,} matching passage{'' if count == 1 else 's'}" if count
                else "no passage matches")
    runs = ("" if pair.runs_shared is None
            else f" · {_percent(pair.runs_shared)} of 5-word runs shared")
    return (f"{right} holds {_percent(pair.held_a)} of {left} · {left} holds "
            f"{_percent(pair.held_b)} of {right} · {passages} at "
            f"{format_threshold(pair.threshold)}{runs}")


def _percent(share: float) -> str:
    return f"{math.floor(share * 100 + 1e-9):d}%"


def _qt_position(text: str, index: int) -> int:
    """A Python character offset as a position in Qt's text, which counts UTF-16 units: a
    character outside the Basic Multilingual Plane (an emoji) counts twice there."""
    head = text[:index]
    return len(head.encode("utf-16-le")) // 2 if not head.isascii() else index


class ComparePanel(QWidget):
    """Left and right row with titles; `show_pair` fills both, `show_documents` replaces
    the word diff with the passages two documents share."""

    documentsWanted = Signal(int, int)   # item ids of the pair shown: what do they share?

    def __init__(self, parent: QWidget | None = None, question_height: int | None = None
                 ) -> None:
        """`question_height`: the most height two questions get (Ask me and Measure quality
        keep their buttons close under a few lines); two documents take what the layout
        gives."""
        super().__init__(parent)
        self._question_height = question_height
        self.left_title = QLabel("", self)
        self.right_title = QLabel("", self)
        self.shares = QLabel("", self)
        self.shares.setWordWrap(True)
        self.shares.setVisible(False)
        for title in (self.left_title, self.right_title):
            # A long id is cut at the pane's edge rather than widen the window.
            title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.left = QTextBrowser(self)
        self.right = QTextBrowser(self)
        for view in (self.left, self.right):
            view.setOpenLinks(False)
            view.setMinimumHeight(60)
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.left_title, 0, 0)
        layout.addWidget(self.right_title, 0, 1)
        layout.addWidget(self.shares, 1, 0, 1, 2)
        layout.addWidget(self.left, 2, 0)
        layout.addWidget(self.right, 2, 1)
        self.rows: tuple[Row, Row] | None = None   # the pair on screen, when it has rows
        self.documents: DocumentPair | None = None  # what it shares, once shown
        self.clear()

    def clear(self, placeholder: str = "") -> None:
        """Empty both sides, `placeholder` in the left title. Each mode says its own: the
        clusters ask for a member, Ask me and Measure quality say that pairs are being found
        (one placeholder for all asked for a member where there is none to select)."""
        self.rows, self.documents = None, None
        self._fit(documents=False)
        self.left_title.setText(placeholder)
        self.right_title.setText("")
        self.shares.setVisible(False)
        self.left.clear()
        self.right.clear()

    def show_pair(self, left_title: str, left_text: str, right_title: str, right_text: str,
                  rows: tuple[Row, Row] | None = None) -> None:
        """Both texts, the differing words highlighted; with `rows`, ask what the two
        share (`documentsWanted`): documents get their passages when the answer comes."""
        a, b = word_diff(left_text, right_text)
        self.rows, self.documents = rows, None
        self._fit(documents=False)
        self.left_title.setText(left_title)
        self.right_title.setText(right_title)
        self.left_title.setToolTip(left_title)
        self.right_title.setToolTip(right_title)
        self.shares.setVisible(False)
        self.left.setHtml(spans_html(a))
        self.right.setHtml(spans_html(b))
        if rows is not None:
            self.documentsWanted.emit(rows[0].item_id, rows[1].item_id)

    def show_documents(self, item_a: int, item_b: int, pair: DocumentPair | None) -> None:
        """The answer to `documentsWanted`: the passages `pair` shares, on both sides, and
        the share line. None (two questions: no text read in several windows) or an answer
        for a pair no longer on screen changes nothing."""
        if pair is None or self.rows is None or \
                (self.rows[0].item_id, self.rows[1].item_id) != (item_a, item_b):
            return
        self.documents = pair
        self._fit(documents=True)
        self.shares.setText(shares_line(pair, self.rows[0].name, self.rows[1].name))
        self.shares.setVisible(True)
        # Both sides open at the passage that comes first in the left text, each at its own
        # place: with a new introduction on the right, the left opens at its top and the
        # right where the copy starts.
        first = min(pair.passages, key=lambda p: p.a_start, default=None)
        self._show_passages(self.left, pair.text_a,
                            [(p.a_start, p.a_end) for p in pair.passages],
                            first.a_start if first else None)
        self._show_passages(self.right, pair.text_b,
                            [(p.b_start, p.b_end) for p in pair.passages],
                            first.b_start if first else None)

    def _fit(self, *, documents: bool) -> None:
        if self._question_height is not None:
            self.setMaximumHeight(QWIDGETSIZE_MAX if documents else self._question_height)

    @staticmethod
    def _show_passages(view: QTextBrowser, text: str, spans: list[tuple[int, int]],
                       scroll_to: int | None) -> None:
        """`text` as it was read (the spans index into it), each span in its passage's
        colour, character `scroll_to` scrolled to the top. Plain text, so that offsets are
        the text's own: HTML would fold its runs of spaces and shift every span after them.
        Where two spans overlap (two parts of one document match the same part of the
        other) the better passage's colour shows."""
        # setPlainText gives the whole text the format at the cursor: after a word diff or
        # other passages, a highlight's colour would spread over all of it.
        view.setCurrentCharFormat(QTextCharFormat())
        view.setPlainText(text)
        cursor = QTextCursor(view.document())
        for n in reversed(range(len(spans))):
            start, end = spans[n]
            cursor.setPosition(_qt_position(text, start))
            cursor.setPosition(_qt_position(text, end), QTextCursor.MoveMode.KeepAnchor)
            colour = QTextCharFormat()
            colour.setBackground(passage_colour(n))
            cursor.mergeCharFormat(colour)
        if scroll_to is not None:
            # From the end back to the passage: it lands at the top, not the bottom edge.
            view.moveCursor(QTextCursor.MoveOperation.End)
            cursor.setPosition(_qt_position(text, scroll_to))
            view.setTextCursor(cursor)
            view.ensureCursorVisible()
        else:
            view.moveCursor(QTextCursor.MoveOperation.Start)
