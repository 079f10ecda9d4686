"""`ClusterReviewView`: the duplicate-cluster review screen, keyboard first.

Left, the clusters at the threshold; right, the selected cluster's members (similarity to
the canonical entry as a bar) and a side-by-side comparison of the pair under review: the
canonical and the selected member, or any two selected members. Keys: D duplicate,
N not duplicate, S skip, C set canonical, M move out, J/K next/previous cluster, Ctrl+Z undo,
Ctrl+Shift+Z redo. Above, the threshold calibrated on the verdicts (precision, recall, how
many labels it rests on), and "Ask me", which swaps the clusters for one pair at a time that
the model is unsure of (`AskView`; D, N and S answer it, Ctrl+Z takes an answer back).
Everything it shows comes from the `ReviewController`.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, Qt, Signal
from PySide6.QtGui import QAction, QColor, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QListView,
    QPushButton,
    QSlider,
    QSplitter,
    QStackedWidget,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop_app.models.clusters_model import ClustersModel
from desktop_app.review_controller import ReviewController
from desktop_app.views.ask_view import AskView
from desktop_app.views.compare_panel import ComparePanel
from desktop_app.views.score_delegate import ITEM_ID_ROLE, SCORE_ROLE, ScoreDelegate
from engine.dedup.duplicates import CANONICAL, Cluster, Member
from engine.review.calibration import ENOUGH_OF_EACH, Calibration
from engine.review.overlap import overlap

SLIDER_STEPS = 100          # the slider works in hundredths of similarity
SLIDER_MIN = 50
MOVED_OUT = "moved out"

KEYS = {
    "duplicate": ("D", "Duplicate"),
    "not_duplicate": ("N", "Not duplicate"),
    "skip": ("S", "Skip"),
    "canonical": ("C", "Set canonical"),
    "move_out": ("M", "Move out"),
    "next": ("J", "Next cluster"),
    "previous": ("K", "Previous cluster"),
}


class ClusterReviewView(QWidget):
    """Threshold controls, cluster list, members, comparison and review actions."""

    exportRequested = Signal()

    def __init__(self, controller: ReviewController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.cluster: Cluster | None = None
        self._build()
        self._make_actions()
        self._connect()
        self.show_threshold(controller.threshold)

    # -- construction ----------------------------------------------------------------------
    def _build(self) -> None:
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setRange(SLIDER_MIN, SLIDER_STEPS)
        self.slider.setPageStep(5)
        self.spin = QDoubleSpinBox(self)
        self.spin.setRange(SLIDER_MIN / SLIDER_STEPS, 1.0)
        self.spin.setSingleStep(0.01)
        self.spin.setDecimals(2)
        self.sort = QComboBox(self)
        self.sort.addItem("Largest first", "size")
        self.sort.addItem("Most similar first", "score")
        self.summary = QLabel("", self)
        self.undo_button = QPushButton("Undo", self)
        self.redo_button = QPushButton("Redo", self)
        self.export_button = QPushButton("Export…", self)
        for b in (self.undo_button, self.redo_button):
            b.setEnabled(False)
        self._history: tuple[bool, bool, str] = (False, False, "")   # the clusters' undo
        self._ask_undo: tuple[bool, str] = (False, "")                 # Ask me's
        self.calibration_label = QLabel("", self)
        self.use_calibrated_button = QPushButton("Use", self)
        self.use_calibrated_button.setToolTip("Move the threshold to the calibrated one")
        self.use_calibrated_button.setEnabled(False)
        self.ask_button = QPushButton("Ask me", self)
        self.ask_button.setCheckable(True)
        self.ask_button.setToolTip("Answer the pairs the model is least sure of (D / N / S)")
        top = QHBoxLayout()
        top.addWidget(QLabel("Threshold", self))
        top.addWidget(self.slider, 2)
        top.addWidget(self.spin)
        top.addSpacing(12)
        top.addWidget(self.sort)
        top.addWidget(self.summary, 3)
        top.addWidget(self.undo_button)
        top.addWidget(self.redo_button)
        top.addWidget(self.export_button)
        top.addWidget(self.ask_button)
        calibration_row = QHBoxLayout()
        calibration_row.addWidget(self.calibration_label, 1)
        calibration_row.addWidget(self.use_calibrated_button)
        self.show_calibration(None)

        self.clusters_model = ClustersModel(self)
        self.cluster_list = QListView(self)
        self.cluster_list.setModel(self.clusters_model)
        self.cluster_list.setUniformItemSizes(True)
        self.cluster_list.setAlternatingRowColors(True)
        self.cluster_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.cluster_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.cluster_list.setMinimumWidth(280)

        self.members = QTableWidget(0, 3, self)
        self.members.setHorizontalHeaderLabels(["ID", "Text  ·  similarity to canonical",
                                                "Decision"])
        self.members.setItemDelegateForColumn(1, ScoreDelegate(self.members))
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
        self.pair_label = QLabel("", self)

        right = QWidget(self)
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_split = QSplitter(Qt.Orientation.Vertical, right)
        right_split.addWidget(self.members)
        right_split.addWidget(self.compare)
        right_split.setStretchFactor(0, 3)
        right_split.setStretchFactor(1, 2)
        right_layout.addWidget(right_split, 1)
        right_layout.addWidget(self.pair_label)
        right_layout.addLayout(buttons)

        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.cluster_list)
        split.addWidget(right)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([420, 780])
        self.ask_view = AskView(self.controller.ask, self)
        self.stack = QStackedWidget(self)
        self.stack.addWidget(split)
        self.stack.addWidget(self.ask_view)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(calibration_row)
        layout.addWidget(self.stack, 1)

    def _make_actions(self) -> None:
        self.actions_by_name: dict[str, QAction] = {}
        handlers = {
            "duplicate": lambda: self.mark_pair(1),
            "not_duplicate": lambda: self.mark_pair(0),
            "skip": self.skip,
            "canonical": self.set_canonical,
            "move_out": self.move_out,
            "next": lambda: self.step_cluster(1),
            "previous": lambda: self.step_cluster(-1),
            "undo": self.undo,
            "redo": self.controller.redo,
        }
        keys = {name: [QKeySequence(key)] for name, (key, _) in KEYS.items()}
        # Spelled out: the platform's standard Redo is Ctrl+Y on some desktops, Ctrl+Shift+Z
        # on others, and neither under the offscreen test platform.
        keys["undo"] = [QKeySequence("Ctrl+Z")]
        keys["redo"] = [QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")]
        for name, handler in handlers.items():
            action = QAction(name.replace("_", " "), self)
            action.setShortcuts(keys[name])
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(handler)
            self.addAction(action)
            self.actions_by_name[name] = action
        for name, button in self.action_buttons.items():
            button.clicked.connect(self.actions_by_name[name].trigger)
        self.undo_button.clicked.connect(self.actions_by_name["undo"].trigger)
        self.redo_button.clicked.connect(self.actions_by_name["redo"].trigger)

    def _connect(self) -> None:
        c = self.controller
        self.slider.valueChanged.connect(lambda v: c.set_threshold(v / SLIDER_STEPS))
        self.spin.valueChanged.connect(c.set_threshold)
        self.sort.currentIndexChanged.connect(lambda _: c.set_sort(self.sort.currentData()))
        self.export_button.clicked.connect(self.exportRequested)
        c.thresholdChanged.connect(self.show_threshold)
        c.clustersChanged.connect(self.show_clusters)
        c.clusterUpdated.connect(self.update_cluster)
        c.historyChanged.connect(self.show_history)
        c.ask.undoChanged.connect(self._ask_undo_changed)
        c.busy.connect(self._show_busy)
        c.calibrationReady.connect(self.show_calibration)
        self.use_calibrated_button.clicked.connect(c.use_calibrated)
        self.ask_button.toggled.connect(self.set_asking)
        self.cluster_list.selectionModel().currentChanged.connect(
            lambda current, _prev: self.show_cluster(self.clusters_model.cluster(current.row())))
        self.members.itemSelectionChanged.connect(self.show_comparison)

    # -- rendering -------------------------------------------------------------------------
    def show_threshold(self, value: float) -> None:
        """Move the slider and spin box to `value` without echoing it back."""
        for widget, v in ((self.slider, round(value * SLIDER_STEPS)), (self.spin, value)):
            widget.blockSignals(True)
            widget.setValue(v)
            widget.blockSignals(False)

    def show_calibration(self, calibration: Calibration | None) -> None:
        """The calibrated threshold and what it rests on, or what it still needs."""
        if calibration is None:
            text = (f"Calibrated threshold: label pairs duplicate (D) and not duplicate (N); "
                    f"from {ENOUGH_OF_EACH} of each it becomes the default.")
        else:
            text = (f"Calibrated threshold {calibration.threshold:.3f} · precision "
                    f"{calibration.precision:.0%} · recall {calibration.recall:.0%} · on "
                    f"{calibration.labels:,} labels ({calibration.positives:,} duplicate, "
                    f"{calibration.negatives:,} not)")
            if not calibration.enough:
                text += f" · the default from {ENOUGH_OF_EACH} of each"
        self.calibration_label.setText(text)
        self.use_calibrated_button.setEnabled(calibration is not None and calibration.enough)

    def set_asking(self, on: bool) -> None:
        """Swap the clusters for "Ask me" and back (re-cut: answers are verdicts too)."""
        self.ask_button.setChecked(on)
        self.stack.setCurrentWidget(self.ask_view if on else self.stack.widget(0))
        for name in ("canonical", "move_out", "next", "previous", "redo"):
            self.actions_by_name[name].setEnabled(not on)   # their keys too
            if name in self.action_buttons:
                self.action_buttons[name].setEnabled(not on)
        self._show_undo()
        if on:
            self.controller.ask.start()
        else:
            self.controller.show_clusters()

    @property
    def asking(self) -> bool:
        return self.stack.currentWidget() is self.ask_view

    def show_clusters(self, clusters: list[Cluster]) -> None:
        current = self.cluster.cluster_id if self.cluster is not None else None
        self.clusters_model.set_clusters(clusters)
        self._show_summary()
        pos = self.clusters_model.position_of(current) if current is not None else None
        self.select_cluster(pos if pos is not None else 0)

    def select_cluster(self, position: int) -> None:
        if self.clusters_model.rowCount() == 0:
            self.show_cluster(None)
            return
        position = min(max(position, 0), self.clusters_model.rowCount() - 1)
        index = self.clusters_model.index(position)
        self.cluster_list.selectionModel().setCurrentIndex(
            index, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        self.cluster_list.scrollTo(index)
        self.show_cluster(self.clusters_model.cluster(position))

    def _show_summary(self) -> None:
        clusters, rows, reviewed = self.clusters_model.counts()
        self.summary.setText(f"{clusters:,} clusters · {rows:,} rows · {reviewed:,} reviewed")

    def update_cluster(self, position: int, cluster: Cluster) -> None:
        self.clusters_model.update(position, cluster)
        self._show_summary()
        if self.cluster is not None and cluster.cluster_id == self.cluster.cluster_id:
            selected = self.selected_members()
            keep = selected[0].item_id if len(selected) == 1 else None
            self.show_cluster(cluster, select=keep, advance=True)

    def show_cluster(self, cluster: Cluster | None, select: int | None = None,
                     advance: bool = False) -> None:
        """List the members; select `select` (or, with `advance`, the next unreviewed)."""
        if cluster is not None and self.cluster is not None and \
                cluster.cluster_id != self.cluster.cluster_id:
            select, advance = None, False
        self.cluster = cluster
        self.members.blockSignals(True)
        self.members.setRowCount(0)
        if cluster is None:
            self.members.blockSignals(False)
            self.compare.clear()
            self.pair_label.setText("No clusters at this threshold.")
            return
        rows = [(m, m.decision or ("canonical (auto)" if i == 0 else ""))
                for i, m in enumerate(cluster.members)]
        rows += [(m, MOVED_OUT) for m in cluster.rejected]
        self.members.setRowCount(len(rows))
        for r, (m, decision) in enumerate(rows):
            self._set_member_row(r, m, decision)
        self.members.blockSignals(False)
        target = self._row_of(select) if select is not None else None
        if advance or target is None:
            target = self._next_pending(after=target if advance else None)
        self.select_member_row(target if target is not None else 0)
        self.show_comparison()

    def _set_member_row(self, row: int, m: Member, decision: str) -> None:
        id_item = QTableWidgetItem(m.id)
        id_item.setData(ITEM_ID_ROLE, m.item_id)
        text_item = QTableWidgetItem(" ".join(m.text.split()))
        text_item.setData(SCORE_ROLE, float(m.score))
        text_item.setToolTip(m.text)
        decision_item = QTableWidgetItem(decision)
        cells = (id_item, text_item, decision_item)
        if decision == MOVED_OUT:
            for cell in cells:
                cell.setForeground(QColor(140, 140, 140))
        if m.decision == CANONICAL or row == 0:
            for cell in cells:
                font = cell.font()
                font.setBold(True)
                cell.setFont(font)
        for col, cell in enumerate(cells):
            self.members.setItem(row, col, cell)

    def show_history(self, can_undo: bool, can_redo: bool, what: str) -> None:
        self._history = (can_undo, can_redo, what)
        self._show_undo()

    def _ask_undo_changed(self, can_undo: bool, what: str) -> None:
        self._ask_undo = (can_undo, what)
        self._show_undo()

    def _show_undo(self) -> None:
        """Undo and Redo act on what is on screen: the clusters' history, or in Ask me this
        session's answers (taken back last first; there is no redo of those)."""
        if self.asking:
            (can_undo, what), can_redo = self._ask_undo, False
        else:
            can_undo, can_redo, what = self._history
        self.undo_button.setEnabled(can_undo)
        self.redo_button.setEnabled(can_redo)
        self.undo_button.setToolTip(f"Undo: {what}" if what else "")

    def undo(self) -> None:
        if self.asking:
            self.controller.ask.undo()
        else:
            self.controller.undo()

    def _show_busy(self, what: str) -> None:
        if what:
            self.summary.setText(what)

    def show_comparison(self) -> None:
        pair = self.current_pair()
        if pair is None:
            self.compare.clear()
            self.pair_label.setText("")
            return
        a, b = pair
        self.compare.show_pair(f"{a.id}  (canonical)" if self._is_head(a) else a.id, a.text,
                               f"{b.id}  ·  similarity {b.score:.3f}" if self._is_head(a)
                               else b.id, b.text)
        found = overlap(a.text, b.text)
        # The similarity shown is to the canonical entry: only then can a close pair whose
        # content words differ be marked.
        mark = "⚠ " if self._is_head(a) and found.marked(b.score, self.controller.threshold) \
            else ""
        self.pair_label.setText(f"{mark}Reviewing {a.id} ↔ {b.id} · {found.note()}")

    # -- selection helpers -----------------------------------------------------------------
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
        if len(selected) == 1 and not self._is_head(selected[0]):
            return self.cluster.canonical, selected[0]
        return None

    def _is_head(self, m: Member) -> bool:
        return self.cluster is not None and m.item_id == self.cluster.canonical.item_id

    def _row_of(self, item_id: int) -> int | None:
        for r, m in enumerate(self._members_in_rows()):
            if m.item_id == item_id:
                return r
        return None

    def _next_pending(self, after: int | None = None) -> int | None:
        """The first member after row `after` with no verdict yet (not the canonical)."""
        if self.cluster is None:
            return None
        start = (after + 1) if after is not None else 1
        for r in range(max(start, 1), len(self.cluster.members)):
            if not self.cluster.members[r].decision:
                return r
        return None

    # -- actions ---------------------------------------------------------------------------
    def mark_pair(self, label: int) -> None:
        if self.asking:
            self.controller.ask.answer(label)
            return
        pair = self.current_pair()
        if pair is None or self.cluster is None:
            self.pair_label.setText("Select a member (or two) to mark first.")
            return
        self.controller.mark(self.cluster, pair[0].item_id, pair[1].item_id, label)

    def set_canonical(self) -> None:
        selected = self.selected_members()
        if len(selected) == 1 and self.cluster is not None:
            self.controller.set_canonical(self.cluster, selected[0].item_id)

    def move_out(self) -> None:
        selected = self.selected_members()
        if len(selected) == 1 and self.cluster is not None and not self._is_head(selected[0]):
            self.controller.move_out(self.cluster, selected[0].item_id)

    def skip(self) -> None:
        """Leave this member undecided: go to the next one, or the next cluster."""
        if self.asking:
            self.controller.ask.answer(None)
            return
        selected = self.selected_members()
        row = self._row_of(selected[-1].item_id) if selected else 0
        if self.cluster is not None and row is not None and \
                row + 1 < len(self.cluster.members):
            self.select_member_row(row + 1)
        else:
            self.step_cluster(1)

    def step_cluster(self, step: int) -> None:
        current = self.cluster_list.currentIndex().row()
        self.select_cluster(max(current, 0) + step)
