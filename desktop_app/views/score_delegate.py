"""Painting a search hit as one line: its text, then a short similarity bar and the number,
and where given (`OVERLAP_ROLE`) the words' overlap beside it. A long text's hit shows the
passage that matched rather than the text's beginning; `BOLD_ROLE` says which characters of
the line are that passage, painted bold.

A bar reads faster than a column of decimals when scanning "is any of these the same
question?"; the number stays for precision. Colours follow the window's one threshold (the
project threshold until the analyst moves it; given as a callable): green at or above it,
amber for "related" (up to `RELATED_BELOW` under it), grey below.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QFontMetrics, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from engine.review.calibration import DEFAULT_THRESHOLD

SCORE_ROLE = Qt.ItemDataRole.UserRole + 10
ITEM_ID_ROLE = Qt.ItemDataRole.UserRole + 11
OVERLAP_ROLE = Qt.ItemDataRole.UserRole + 12   # "∩ 0.43" or "≠ ∩ 0.43": why it matches
BOLD_ROLE = Qt.ItemDataRole.UserRole + 13      # (start, end) of the line painted bold

BAR_WIDTH = 72
NUMBER_WIDTH = 44
OVERLAP_WIDTH = 64
PADDING = 8
RELATED_BELOW = 0.15
STRONG_COLOUR, RELATED_COLOUR, FAR_COLOUR = "#2e9d4f", "#d69a1d", "#8c8c8c"


def score_colour(score: float, threshold: float = DEFAULT_THRESHOLD) -> QColor:
    if score >= threshold:
        return QColor(STRONG_COLOUR)
    if score >= threshold - RELATED_BELOW:
        return QColor(RELATED_COLOUR)
    return QColor(FAR_COLOUR)


class ScoreDelegate(QStyledItemDelegate):
    """Text on the left (elided), similarity bar and value on the right."""

    def __init__(self, parent: QObject | None = None,
                 threshold: Callable[[], float] = lambda: DEFAULT_THRESHOLD) -> None:
        super().__init__(parent)
        self._threshold = threshold

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text, opt.text = opt.text, ""
        widget = opt.widget
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)

        score = float(index.data(SCORE_ROLE) or 0.0)
        rect = opt.rect.adjusted(PADDING, 0, -PADDING, 0)
        number_rect = QRect(rect.right() - NUMBER_WIDTH, rect.top(), NUMBER_WIDTH,
                            rect.height())
        overlap = index.data(OVERLAP_ROLE)
        overlap_rect = QRect(number_rect.left() - (OVERLAP_WIDTH if overlap else 0),
                             rect.top(), OVERLAP_WIDTH if overlap else 0, rect.height())
        bar_h = max(6, rect.height() // 4)
        bar_rect = QRect(overlap_rect.left() - PADDING - BAR_WIDTH,
                         rect.center().y() - bar_h // 2, BAR_WIDTH, bar_h)
        text_rect = QRect(rect.left(), rect.top(), bar_rect.left() - PADDING - rect.left(),
                          rect.height())

        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(opt.palette.color(role))
        painter.setFont(opt.font)
        bold = index.data(BOLD_ROLE)
        if bold:
            start, end = bold
            _draw_runs(painter, text_rect, opt.font, [(text[:start], False),
                                                      (text[start:end], True),
                                                      (text[end:], False)])
        else:
            elided = opt.fontMetrics.elidedText(text, Qt.TextElideMode.ElideRight,
                                                text_rect.width())
            painter.drawText(text_rect,
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, elided)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(opt.palette.color(QPalette.ColorRole.Midlight))
        painter.drawRoundedRect(bar_rect, 3, 3)
        filled = QRect(bar_rect)
        filled.setWidth(round(BAR_WIDTH * min(max(score, 0.0), 1.0)))
        painter.setBrush(score_colour(score, self._threshold()))
        painter.drawRoundedRect(filled, 3, 3)
        painter.setPen(opt.palette.color(role))
        painter.drawText(number_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                         f"{score:.2f}")
        if overlap:
            painter.setPen(opt.palette.color(QPalette.ColorRole.PlaceholderText))
            painter.drawText(overlap_rect,
                             Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight, overlap)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        return QSize(base.width(), max(base.height(), int(option.fontMetrics.height() * 1.9)))


def _draw_runs(painter: QPainter, rect: QRect, font: QFont,
               runs: list[tuple[str, bool]]) -> None:
    """Runs of text one after another on one line, each bold or not, the run that reaches
    the rect's right edge elided there (and nothing after it)."""
    x = rect.left()
    for text, bold in runs:
        if not text:
            continue
        run_font = QFont(font)
        run_font.setBold(bold)
        metrics = QFontMetrics(run_font)
        room = rect.right() - x
        if room <= 0:
            break
        width = metrics.horizontalAdvance(text)
        if width > room:
            text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, room)
            width = room
        painter.setFont(run_font)
        painter.drawText(QRect(x, rect.top(), width, rect.height()),
                         Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft, text)
        x += width
    painter.setFont(font)
