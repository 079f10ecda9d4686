"""One cluster under review: its members (similarity to the canonical row as a bar, the
verdict beside it), the side-by-side comparison of the pair under review, and the review's
action buttons.

The pair under review is the canonical and the selected member, or any two selected members.
The pane knows which members are selected and which still wait for a verdict; what a
verdict does is the `ClusterReviewView`'s (through the controller). Each pair it shows is
announced (`pairShown`), so the view can ask the second opinion about it; its suggestion
shows in the pane's `SecondOpinionLine`, only while one is offered.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_app.views.compare_panel import ComparePanel, Row
from desktop_app.views.score_delegate import ITEM_ID_ROLE, SCORE_ROLE, ScoreDelegate
from desktop_app.views.second_opinion_line import SecondOpinionLine
from engine.dedup.row_clusters import CANONICAL, Cluster, Member
from engine.review.overlap import overlap

MOVED_OUT = "moved out"
SELECT_A_MEMBER = "Select a member to compare it with the canonical row"

KEYS = {
    "duplicate": ("D", "Duplicate"),
    "not_duplicate": ("N", "Not duplicate"),
    "skip": ("S", "Skip"),
    "canonical": ("C", "Set canonical"),
    "move_out": ("M", "Move out"),
    "next": ("J", "Next cluster"),
    "previous": ("K", "Previous cluster"),
}


class ClusterPane(QWidget):
    """Members, comparison and action buttons of the cluster on screen."""

    pairShown = Signal(object)   # the pair under review, (Member, Member), or None

    def __init__(self, threshold: Callable[[], float], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._threshold = threshold
        self.cluster: Cluster | None = None
        self.members = QTableWidget(0, 3, self)
        self.members.setHorizontalHeaderLabels(["ID", "Text  ·  similarity to canonical",
                                                "Verdict"])
        self.members.setItemDelegateForColumn(1, ScoreDelegate(self.members, threshold))
        self.members.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.members.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.members.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.members.verticalHeader().hide()
        self.members.setWordWrap(False)
        header = self.members.horizontalHeader()
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.resizeSection(0, 90)
        header.resizeSection(2, 130)

        self.compare = ComparePanel(self)
        self.action_buttons: dict[str, QPushButton] = {}
        buttons = QHBoxLayout()
        for name, (key, label) in KEYS.items():
            button = QPushButton(f"{label} ({key})", self)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            self.action_buttons[name] = button
            buttons.addWidget(button)
        buttons.addStretch(1)
        self.next_when_done = QCheckBox("Next cluster when this one is done", self)
        self.next_when_done.setChecked(True)
        self.next_when_done.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.next_when_done.setToolTip("Once every member has a verdict, go on to the next "
                                       "cluster by itself (else J does)")
        self.pair_label = QLabel("", self)
        # The differing words can be many: the line wraps rather than widen the window.
        self.pair_label.setWordWrap(True)
        pair_row = QHBoxLayout()
        pair_row.addWidget(self.pair_label, 1)
        pair_row.addWidget(self.next_when_done)
        self.opinion = SecondOpinionLine(self)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Vertical, self)
        split.addWidget(self.members)
        split.addWidget(self.compare)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        layout.addWidget(split, 1)
        layout.addLayout(pair_row)
        layout.addWidget(self.opinion)
        layout.addLayout(buttons)
        self.members.itemSelectionChanged.connect(self.show_comparison)

    # -- rendering -------------------------------------------------------------------------
    def show_cluster(self, cluster: Cluster | None, select: int | None = None,
                     advance: bool = False) -> None:
        """List the members; select `select` (or, with `advance`, the next member after it
        that waits for a verdict)."""
        if cluster is not None and self.cluster is not None and \
                cluster.cluster_id != self.cluster.cluster_id:
            select, advance = None, False
        # Where `select` stood before: a member judged "not duplicate" (or moved out) leaves
        # the members, and the one after it takes its row.
        before = self.row_of(select) if advance and select is not None else None
        self.cluster = cluster
        self.members.blockSignals(True)
        self.members.setRowCount(0)
        if cluster is None:
            self.members.blockSignals(False)
            self.compare.clear()
            self.pair_label.setText("No clusters at this threshold.")
            self._announce(None)
            return
        rows = [(m, m.verdict or ("canonical (auto)" if i == 0 else ""))
                for i, m in enumerate(cluster.members)]
        rows += [(m, MOVED_OUT) for m in cluster.rejected]
        self.members.setRowCount(len(rows))
        for r, (m, verdict) in enumerate(rows):
            self._set_member_row(r, m, verdict)
        self.members.blockSignals(False)
        target = self.row_of(select) if select is not None else None
        if advance or target is None:
            target = self._next_pending(after=self._advance_from(target, before)
                                        if advance else None)
        self.select_member_row(target if target is not None else 0)
        self.show_comparison()

    def _advance_from(self, row: int | None, before: int | None) -> int | None:
        """The row after which the next member waiting for a verdict is looked for: the
        judged member's own row while it is still a member, else the row before the one it
        left (its successor moved up into it)."""
        if self.cluster is None:
            return None
        if row is not None and row < len(self.cluster.members):
            return row
        return before - 1 if before is not None else None

    def _set_member_row(self, row: int, m: Member, verdict: str) -> None:
        id_item = QTableWidgetItem(m.id)
        id_item.setData(ITEM_ID_ROLE, m.item_id)
        text_item = QTableWidgetItem(" ".join(m.text.split()))
        text_item.setData(SCORE_ROLE, float(m.score))
        text_item.setToolTip(m.text)
        verdict_item = QTableWidgetItem(verdict)
        cells = (id_item, text_item, verdict_item)
        if verdict == MOVED_OUT:
            for cell in cells:
                cell.setForeground(QColor(140, 140, 140))
        if m.verdict == CANONICAL or row == 0:
            for cell in cells:
                font = cell.font()
                font.setBold(True)
                cell.setFont(font)
        for col, cell in enumerate(cells):
            self.members.setItem(row, col, cell)

    def show_comparison(self) -> None:
        pair = self.current_pair()
        if pair is None:
            several = len(self._members_in_rows()) > 1
            self.compare.clear(SELECT_A_MEMBER if several else "")
            done = self.cluster is not None and self.cluster.reviewed and several
            self.pair_label.setText("Every member has a verdict: J for the next cluster."
                                    if done else "")
            self._announce(None)
            return
        a, b = pair
        self.compare.show_pair(f"{a.id}  (canonical)" if self.is_head(a) else a.id, a.text,
                               f"{b.id}  ·  similarity {b.score:.3f}" if self.is_head(a)
                               else b.id, b.text,
                               rows=(Row(a.item_id, a.id), Row(b.item_id, b.id)))
        found = overlap(a.text, b.text)
        # The similarity shown is to the canonical row: only then can a close pair whose
        # meaning flips (a number, negation, an opposite, a name differs) be marked.
        mark = "⚠ " if self.is_head(a) and found.marked(b.score, self._threshold()) else ""
        self.pair_label.setText(f"{mark}Reviewing {a.id} ↔ {b.id} · {found.note()}")
        self._announce(pair)

    def _announce(self, pair: tuple[Member, Member] | None) -> None:
        """The second opinion's line waits for this pair (None: none is under review)."""
        self.opinion.expect(opinion_key(pair) if pair is not None else None)
        self.pairShown.emit(pair)

    # -- selection -------------------------------------------------------------------------
    def select_member_row(self, row: int) -> None:
        """Select exactly this row. (`selectRow` follows the keyboard modifiers held at that
        moment, so with Ctrl down it would toggle the row instead.)"""
        model = self.members.model()
        if not 0 <= row < model.rowCount():
            return
        flags = (QItemSelectionModel.SelectionFlag.ClearAndSelect
                 | QItemSelectionModel.SelectionFlag.Rows)
        self.members.selectionModel().setCurrentIndex(model.index(row, 0), flags)

    def _members_in_rows(self) -> list[Member]:
        if self.cluster is None:
            return []
        return [*self.cluster.members, *self.cluster.rejected]

    def selected_members(self) -> list[Member]:
        everyone = self._members_in_rows()
        rows = sorted({i.row() for i in self.members.selectionModel().selectedRows()})
        return [everyone[r] for r in rows if r < len(everyone)]

    def current_pair(self) -> tuple[Member, Member] | None:
        """The two selected members, or the canonical and the one selected member."""
        if self.cluster is None:
            return None
        selected = self.selected_members()
        if len(selected) >= 2:
            return selected[0], selected[1]
        if len(selected) == 1 and not self.is_head(selected[0]):
            return self.cluster.canonical, selected[0]
        return None

    def is_head(self, m: Member) -> bool:
        return self.cluster is not None and m.item_id == self.cluster.canonical.item_id

    def row_of(self, item_id: int) -> int | None:
        for r, m in enumerate(self._members_in_rows()):
            if m.item_id == item_id:
                return r
        return None

    def _next_pending(self, after: int | None = None) -> int | None:
        """The first member after row `after` with no verdict yet (not the canonical), else
        the first from the top: the analyst who judged the last member first goes on with
        the keys, never left on the canonical row where D and N have no pair to judge."""
        if self.cluster is None:
            return None
        members = self.cluster.members
        start = max((after + 1) if after is not None else 1, 1)
        for r in [*range(start, len(members)), *range(1, min(start, len(members)))]:
            if not members[r].verdict:
                return r
        return None


def opinion_key(pair: tuple[Member, Member]) -> tuple[int, int]:
    """Which pair a second opinion is about: its two rows, in the order compared."""
    return pair[0].item_id, pair[1].item_id
