"""`ClusterReviewView`: the duplicate-cluster review screen, keyboard first.

Left, the clusters at the threshold; right, the selected cluster's members (similarity to
the canonical row as a bar) and a side-by-side comparison of the pair under review: the
canonical and the selected member, or any two selected members. Keys: D duplicate,
N not duplicate, S skip, C set canonical, M move out, J/K next/previous cluster, Ctrl+Z undo,
Ctrl+Shift+Z redo. Once every member of a cluster has a verdict, the next cluster follows by
itself (a checkbox under the buttons turns that off, kept in QSettings); an undo or redo
brings back the cluster it changed. Above, the project threshold and the one calibrated on
the verdicts (precision, recall, how many verdicts it rests on), and "Ask me", which swaps the
clusters for one pair at a time that the model is unsure of (`AskView`; D, N and S judge
it, Ctrl+Z takes a verdict back, Esc or "Back to clusters" leaves it), and "Measure quality",
one pair drawn at random at a time under the estimates (`MeasureView`, the same keys; Esc
leaves it too). Once the active model's second opinion is offered, the pair under review and
Ask me's pair show its suggestion, and A accepts it (the verdict D or N would give); never
in Measure quality, whose estimate must rest on the analyst's own verdicts.
Everything it shows comes from the `ReviewController`. The parts are widgets of their own:
`ThresholdBar` (the top rows), the cluster list, `ClusterPane` (members, comparison,
buttons) and `AskView`; this view lays them out, owns the keys and sends each key to the
mode on screen.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QSettings, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QListView, QSplitter, QStackedWidget, QVBoxLayout, QWidget

from desktop_app.controllers.review_controller import ReviewController
from desktop_app.table_models.clusters_model import ClustersModel
from desktop_app.views.ask_view import AskView
from desktop_app.views.cluster_pane import KEYS, MOVED_OUT, ClusterPane
from desktop_app.views.measure_view import MeasureView
from desktop_app.views.second_opinion_line import ACCEPT_KEY
from desktop_app.views.since_filter import SinceFilter
from desktop_app.views.threshold_bar import SLIDER_MIN, SLIDER_STEPS, ThresholdBar
from engine.dedup.row_clusters import Cluster, Member
from engine.review.calibration import Calibration

__all__ = ["KEYS", "MOVED_OUT", "SLIDER_MIN", "SLIDER_STEPS", "ClusterReviewView"]

NEXT_WHEN_DONE_KEY = "review/next_cluster_when_done"


class ClusterReviewView(QWidget):
    """Threshold controls, cluster list, members, comparison and review actions."""

    exportRequested = Signal()

    def __init__(self, controller: ReviewController, parent: QWidget | None = None,
                 settings: QSettings | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.settings = settings
        self._history: tuple[bool, bool, str] = (False, False, "")   # the clusters' undo
        self._ask_undo: tuple[bool, str] = (False, "")                 # Ask me's
        self._decided: int | None = None   # the cluster a verdict was just given in
        self._follow_change = False        # an undo / redo: show the cluster it changes
        self._measure_undo: tuple[bool, str] = (False, "")             # Measure quality's
        self._build()
        self._make_actions()
        self._connect()
        self.show_threshold(controller.threshold)

    # -- construction ----------------------------------------------------------------------
    def _build(self) -> None:
        self.bar = ThresholdBar(self)
        # The bar's widgets by their old names: tests and the screenshots drive them.
        self.slider, self.spin, self.sort = self.bar.slider, self.bar.spin, self.bar.sort
        self.summary = self.bar.summary
        self.undo_button, self.redo_button = self.bar.undo_button, self.bar.redo_button
        self.export_button, self.ask_button = self.bar.export_button, self.bar.ask_button
        self.measure_button = self.bar.measure_button
        self.calibration_label = self.bar.calibration_label
        self.use_calibrated_button = self.bar.use_calibrated_button

        self.clusters_model = ClustersModel(self)
        self.cluster_list = QListView(self)
        self.cluster_list.setModel(self.clusters_model)
        self.cluster_list.setUniformItemSizes(True)
        self.cluster_list.setAlternatingRowColors(True)
        self.cluster_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.cluster_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.cluster_list.setMinimumWidth(280)

        self.pane = ClusterPane(lambda: self.controller.threshold, self)
        self.members, self.compare = self.pane.members, self.pane.compare
        self.pair_label, self.action_buttons = self.pane.pair_label, self.pane.action_buttons
        self.next_when_done = self.pane.next_when_done
        if self.settings is not None:
            self.next_when_done.setChecked(
                str(self.settings.value(NEXT_WHEN_DONE_KEY, "true")).lower() == "true")
            self.next_when_done.toggled.connect(
                lambda on: self.settings.setValue(NEXT_WHEN_DONE_KEY, on))

        split = QSplitter(Qt.Orientation.Horizontal, self)
        split.addWidget(self.cluster_list)
        split.addWidget(self.pane)
        split.setStretchFactor(0, 2)
        split.setStretchFactor(1, 3)
        split.setSizes([420, 780])
        self.ask_view = AskView(self.controller.ask, self)
        self.stack = QStackedWidget(self)
        self.stack.addWidget(split)
        self.stack.addWidget(self.ask_view)
        self.since = SinceFilter(self)      # "changed since import N"
        self.measure_view = MeasureView(self.controller.measure, self)
        self.stack.addWidget(self.measure_view)
        layout = QVBoxLayout(self)
        layout.addWidget(self.bar)
        layout.addWidget(self.since)
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
            "redo": self.redo,
            "leave_ask": lambda: self.set_asking(False),
            "accept_opinion": self.accept_opinion,
        }
        keys = {name: [QKeySequence(key)] for name, (key, _) in KEYS.items()}
        # Spelled out: the platform's standard Redo is Ctrl+Y on some desktops, Ctrl+Shift+Z
        # on others, and neither under the offscreen test platform.
        keys["undo"] = [QKeySequence("Ctrl+Z")]
        keys["redo"] = [QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")]
        keys["leave_ask"] = [QKeySequence(Qt.Key.Key_Escape)]
        keys["accept_opinion"] = [QKeySequence(ACCEPT_KEY)]
        for name, handler in handlers.items():
            action = QAction(name.replace("_", " "), self)
            action.setShortcuts(keys[name])
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            action.triggered.connect(handler)
            self.addAction(action)
            self.actions_by_name[name] = action
        self.actions_by_name["leave_ask"].setEnabled(False)   # Esc: only in a pair mode
        self.actions_by_name["accept_opinion"].setEnabled(False)   # A: once one is offered
        self.pane.opinion.accepted.connect(self.actions_by_name["accept_opinion"].trigger)
        for name, button in self.action_buttons.items():
            button.clicked.connect(self.actions_by_name[name].trigger)
        self.undo_button.clicked.connect(self.actions_by_name["undo"].trigger)
        self.redo_button.clicked.connect(self.actions_by_name["redo"].trigger)

    def _connect(self) -> None:
        c = self.controller
        self.bar.thresholdChosen.connect(c.set_threshold)
        self.bar.sortChosen.connect(c.set_sort)
        self.export_button.clicked.connect(self.exportRequested)
        c.thresholdChanged.connect(self.show_threshold)
        c.clustersChanged.connect(self.show_clusters)
        c.clusterUpdated.connect(self.update_cluster)
        c.historyChanged.connect(self.show_history)
        c.ask.undoChanged.connect(self._ask_undo_changed)
        c.measure.undoChanged.connect(self._measure_undo_changed)
        c.measure.calibratedEstimate.connect(self.bar.show_estimated)
        c.busy.connect(self._show_busy)
        c.calibrationReady.connect(self.show_calibration)
        c.projectThresholdReady.connect(self.bar.show_project_threshold)
        c.importsReady.connect(self.since.set_imports)
        c.sinceChanged.connect(self.since.show_since)
        self.since.sinceChosen.connect(c.set_since)
        self.use_calibrated_button.clicked.connect(c.hand_back)
        self.ask_button.toggled.connect(self.set_asking)
        self.ask_view.backRequested.connect(lambda: self.set_asking(False))
        self.measure_button.toggled.connect(self.set_measuring)
        # Each mode's comparison asks what two documents share; the answer comes to all,
        # and a panel takes only the one for the pair it shows.
        for mode, compare in (("clusters", self.compare), ("ask", self.ask_view.compare),
                              ("measure", self.measure_view.compare)):
            compare.documentsWanted.connect(
                lambda a, b, mode=mode: c.compare_documents(a, b, mode))
            c.documentsCompared.connect(compare.show_documents)
        c.opinion.offeredChanged.connect(self._opinion_offered)
        self.pane.pairShown.connect(self._ask_opinion)
        self.cluster_list.selectionModel().currentChanged.connect(
            lambda current, _prev: self.show_cluster(self.clusters_model.cluster(current.row())))

    # -- rendering -------------------------------------------------------------------------
    @property
    def cluster(self) -> Cluster | None:
        """The cluster on screen."""
        return self.pane.cluster

    def show_threshold(self, value: float) -> None:
        self.bar.show_threshold(value)

    def show_calibration(self, calibration: Calibration | None) -> None:
        self.bar.show_calibration(calibration)

    def set_asking(self, on: bool) -> None:
        """Swap the clusters for "Ask me" and back (re-cut: its verdicts are the review's too)."""
        self._set_mode(self.ask_view if on else None)

    def set_measuring(self, on: bool) -> None:
        """Swap the clusters for "Measure quality" and back."""
        self._set_mode(self.measure_view if on else None)

    def _set_mode(self, view: QWidget | None) -> None:
        """Show one of the pair modes (or, None, the clusters): the others' buttons go off,
        the clusters' own actions only work on the clusters."""
        before = self.stack.currentWidget()
        if before is (view if view is not None else self.stack.widget(0)) and all(
                button.isChecked() == (view is mode) for button, mode in
                ((self.ask_button, self.ask_view), (self.measure_button, self.measure_view))):
            return
        for button, mode in ((self.ask_button, self.ask_view),
                             (self.measure_button, self.measure_view)):
            button.blockSignals(True)
            button.setChecked(view is mode)
            button.blockSignals(False)
        self.stack.setCurrentWidget(view if view is not None else self.stack.widget(0))
        on = view is not None
        for name in ("canonical", "move_out", "next", "previous", "redo"):
            self.actions_by_name[name].setEnabled(not on)   # their keys too
            if name in self.action_buttons:
                self.action_buttons[name].setEnabled(not on)
        self.actions_by_name["leave_ask"].setEnabled(on)
        self._enable_accept()
        self._show_undo()
        if view is self.ask_view:
            self.controller.ask.start()
        elif view is self.measure_view:
            self.controller.measure.start()
        elif before is not self.stack.widget(0):
            self.controller.show_clusters()

    @property
    def asking(self) -> bool:
        return self.stack.currentWidget() is self.ask_view

    @property
    def measuring(self) -> bool:
        return self.stack.currentWidget() is self.measure_view

    def show_clusters(self, clusters: list[Cluster]) -> None:
        current = self.cluster.cluster_id if self.cluster is not None else None
        self.clusters_model.set_clusters(clusters, self.controller.changes
                                         if self.controller.since is not None else None)
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
        if self._follow_change and (self.cluster is None
                                    or cluster.cluster_id != self.cluster.cluster_id):
            self._follow_change = False
            self.select_cluster(position)      # an undo or redo: back where it was made
            return
        self._follow_change = False
        if self.cluster is not None and cluster.cluster_id == self.cluster.cluster_id:
            decided, self._decided = self._decided, None
            if decided == cluster.cluster_id and self.next_when_done.isChecked() and \
                    cluster.reviewed and position + 1 < self.clusters_model.rowCount():
                self.select_cluster(position + 1)   # every member judged: the next one
                return
            selected = self.selected_members()
            keep = selected[0].item_id if len(selected) == 1 else None
            self.show_cluster(cluster, select=keep, advance=True)

    def show_cluster(self, cluster: Cluster | None, select: int | None = None,
                     advance: bool = False) -> None:
        self.pane.show_cluster(cluster, select, advance)

    def show_history(self, can_undo: bool, can_redo: bool, what: str) -> None:
        # The verdict's clusters came before this (`clusterUpdated`): what was waiting
        # for them is done, also when no cluster on the list changed.
        self._follow_change, self._decided = False, None
        self._history = (can_undo, can_redo, what)
        self._show_undo()

    def _ask_undo_changed(self, can_undo: bool, what: str) -> None:
        self._ask_undo = (can_undo, what)
        self._show_undo()

    def _measure_undo_changed(self, can_undo: bool, what: str) -> None:
        self._measure_undo = (can_undo, what)
        self._show_undo()

    def _show_undo(self) -> None:
        """Undo and Redo act on what is on screen: the clusters' history, or in Ask me this
        session's verdicts (taken back last first; there is no redo of those)."""
        if self.asking:
            (can_undo, what), can_redo = self._ask_undo, False
        elif self.measuring:
            (can_undo, what), can_redo = self._measure_undo, False
        else:
            can_undo, can_redo, what = self._history
        self.bar.show_history(can_undo, can_redo, what)

    def undo(self) -> None:
        if self.asking:
            self.controller.ask.undo()
        elif self.measuring:
            self.controller.measure.undo()
        else:
            self._follow_change = True
            self.controller.undo()

    def redo(self) -> None:
        self._follow_change = True
        self.controller.redo()

    def _show_busy(self, what: str) -> None:
        if what:
            self.summary.setText(what)

    def show_comparison(self) -> None:
        self.pane.show_comparison()

    # -- the second opinion ----------------------------------------------------------------
    def _opinion_offered(self, judge: dict | None) -> None:
        self.pane.opinion.set_offered(judge is not None)
        self._enable_accept()
        if judge is not None:
            self._ask_opinion(self.current_pair())

    def _enable_accept(self) -> None:
        """A accepts a suggestion while one is offered, except in Measure quality."""
        self.actions_by_name["accept_opinion"].setEnabled(
            self.controller.opinion.offered is not None and not self.measuring)

    def _ask_opinion(self, pair: tuple[Member, Member] | None) -> None:
        """Ask the second opinion about the pair under review (when one is offered)."""
        if pair is None or self.controller.opinion.offered is None:
            return
        key, line = (pair[0].item_id, pair[1].item_id), self.pane.opinion
        # The model's side is known for the canonical and a member: its similarity to it.
        model = int(pair[1].score >= self.controller.threshold) \
            if self.pane.is_head(pair[0]) else None
        line.expect(key)
        self.controller.opinion.ask("clusters", pair[0].text, pair[1].text,
                                    lambda p: line.show_for(key, p, model),
                                    lambda message: line.failed_for(key, message))

    def accept_opinion(self) -> None:
        """A: the verdict the second opinion suggests on the pair on screen, given exactly
        as D or N gives it; nothing while no suggestion for that pair has come."""
        if self.measuring:
            return
        if self.asking:
            self.ask_view.accept_opinion()
            return
        verdict = self.pane.opinion.suggestion
        if verdict is not None:
            self.mark_pair(verdict)

    # -- selection (the pane's) ------------------------------------------------------------
    def select_member_row(self, row: int) -> None:
        self.pane.select_member_row(row)

    def selected_members(self) -> list[Member]:
        return self.pane.selected_members()

    def current_pair(self) -> tuple[Member, Member] | None:
        return self.pane.current_pair()

    # -- actions ---------------------------------------------------------------------------
    def mark_pair(self, verdict: int) -> None:
        if self.asking:
            self.controller.ask.judge(verdict)
            return
        if self.measuring:
            self.controller.measure.judge(verdict)
            return
        pair = self.current_pair()
        if pair is None or self.cluster is None:
            self.pair_label.setText("Select a member (or two) to mark first.")
            return
        self._decided = self.cluster.cluster_id
        self.controller.mark(self.cluster, pair[0].item_id, pair[1].item_id, verdict)

    def set_canonical(self) -> None:
        selected = self.selected_members()
        if len(selected) == 1 and self.cluster is not None:
            self.controller.set_canonical(self.cluster, selected[0].item_id)

    def move_out(self) -> None:
        selected = self.selected_members()
        if len(selected) == 1 and self.cluster is not None and not self.pane.is_head(selected[0]):
            self._decided = self.cluster.cluster_id
            self.controller.move_out(self.cluster, selected[0].item_id)

    def skip(self) -> None:
        """Leave this member undecided: go to the next one, or the next cluster."""
        if self.asking:
            self.controller.ask.judge(None)
            return
        if self.measuring:
            self.controller.measure.judge(None)
            return
        selected = self.selected_members()
        row = self.pane.row_of(selected[-1].item_id) if selected else 0
        if self.cluster is not None and row is not None and \
                row + 1 < len(self.cluster.members):
            self.select_member_row(row + 1)
        else:
            self.step_cluster(1)

    def step_cluster(self, step: int) -> None:
        current = self.cluster_list.currentIndex().row()
        self.select_cluster(max(current, 0) + step)
