"""Painting a search hit as one line: its text, then a short similarity bar and the number,
and where given (`OVERLAP_ROLE`) the words' overlap beside it.

A bar reads faster than a column of decimals when scanning "is any of these the same
question?"; the number stays for precision. Colours follow the default duplicate threshold
(0.85): green at or above it, amber for "related", grey below.
"""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPalette
from PySide6.QtWidgets import QApplication, QStyle, QStyledItemDelegate, QStyleOptionViewItem

SCORE_ROLE = Qt.ItemDataRole.UserRole + 10
ITEM_ID_ROLE = Qt.ItemDataRole.UserRole + 11
OVERLAP_ROLE = Qt.ItemDataRole.UserRole + 12   # "∩ 0.43" or "≠ ∩ 0.43": why it matches

BAR_WIDTH = 72
NUMBER_WIDTH = 44
OVERLAP_WIDTH = 64
PADDING = 8
STRONG, RELATED = 0.85, 0.70


def score_colour(score: float) -> QColor:
    if score >= STRONG:
        return QColor("#2e9d4f")
    if score >= RELATED:
        return QColor("#d69a1d")
    return QColor("#8c8c8c")


class ScoreDelegate(QStyledItemDelegate):
    """Text on the left (elided), similarity bar and value on the right."""

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
        elided = opt.fontMetrics.elidedText(text, Qt.TextElideMode.ElideRight,
                                            text_rect.width())
        painter.drawText(text_rect, Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                         elided)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(opt.palette.color(QPalette.ColorRole.Midlight))
        painter.drawRoundedRect(bar_rect, 3, 3)
        filled = QRect(bar_rect)
        filled.setWidth(round(BAR_WIDTH * min(max(score, 0.0), 1.0)))
        painter.setBrush(score_colour(score))
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
