"""`ReviewController`: the review screen's state on the GUI side, fed by the engine.

It holds the threshold (the one value that the slider, the spin box and the histogram's line
all show), the clusters as cut and as the verdicts make them, and the undo history, and it
runs every computation on the bridge's review pool, in order, so a verdict and the re-cut
after it cannot cross. Views only render what it emits. A re-cut, a plot or a curve asked
again makes the older request stale (`latest`): dragging the slider never ends on a stale
cut, and a quick series of verdicts draws the verdict curve once, not once each.

The threshold is the project threshold (`engine.review.calibration`: set by hand, else
calibrated on the analyst's verdicts once there are enough, else the model's default), read as
soon as a project opens, and it is the one threshold of the window: the clusters, the exports,
the search's "This may already exist" and its colours, Ask me, Measure quality and a file's
check use it. Moving the slider sets it by hand for the project (saved once the slider rests,
so the command line cuts where the window does); `hand_back` forgets that. Without a
threshold set by hand, the slider follows the calibration as verdicts come in: a window
showing one threshold while the project uses another is what this replaces. It also owns the
"Ask me" mode's controller (`AskController`), whose verdicts are the review's too, and the
second opinion's (`SecondOpinionController`), asked again whenever the project opens or its
model may have changed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal

from desktop_app.bridge import EngineBridge
from desktop_app.controllers.ask_controller import AskController
from desktop_app.controllers.measure_controller import MeasureController
from desktop_app.controllers.second_opinion_controller import SecondOpinionController
from desktop_app.job_runner import Job, Pool
from engine.dedup.row_clusters import Cluster
from engine.review.calibration import (
    BY_HAND,
    DEFAULT_THRESHOLD,
    Calibration,
    ProjectThreshold,
)
from engine.review.history import CanonicalChange, ReviewHistory, Superseded, VerdictChange

log = logging.getLogger("duplens.gui")

RECUT_DELAY_MS = 60      # coalesce slider drags: one re-cut per pause, not per pixel
SAVE_DELAY_MS = 400      # a moved threshold is saved as the project's once it rests
SORT_KEYS = ("size", "score")


class ReviewController(QObject):
    """Threshold, clusters and verdicts of the open project; all engine work off-thread."""

    thresholdChanged = Signal(float)
    clustersChanged = Signal(list)           # [Cluster] as shown, in display order
    clusterUpdated = Signal(int, object)     # position in the list, the Cluster after a verdict
    historyChanged = Signal(bool, bool, str)  # can undo, can redo, what the last action did
    histogramReady = Signal(object)          # engine.review.histogram.Histogram
    curveReady = Signal(object)              # engine.pair_metrics.ThresholdCurve
    mapReady = Signal(object)                # engine.review.layout.EmbeddingMap
    calibrationReady = Signal(object)        # engine.review.calibration.Calibration | None
    projectThresholdReady = Signal(object)   # engine.review.calibration.ProjectThreshold
    exported = Signal(str, int)              # path, rows written
    busy = Signal(str)                       # what the review thread is doing ("" when idle)
    importsReady = Signal(list)              # the project's imports (`Rows.imports`)
    sinceChanged = Signal(object)            # the import the list is filtered on, or None
    # two rows' item ids and what their texts share (engine.services.documents.DocumentPair),
    # None for two questions
    documentsCompared = Signal(int, int, object)

    def __init__(self, bridge: EngineBridge, parent: QObject | None = None, *,
                 opinion: SecondOpinionController | None = None) -> None:
        super().__init__(parent)
        self.bridge = bridge
        self.opinion = opinion or SecondOpinionController(bridge, self)
        self.threshold = DEFAULT_THRESHOLD
        self.sort_key = "size"
        self.raw: dict[str, Cluster] = {}        # cluster id -> as cut
        # "duplicate" verdicts joined a cut cluster to rows of others (found off the GUI
        # thread with each cut: per verdict it walked every member of every cluster)
        self._joined = False
        self.clusters: list[Cluster] = []        # as shown
        self.everything: list[Cluster] = []      # as decided, before "since import N"
        self.since: int | None = None            # show what changed since this import
        self.changes: dict[str, set[str]] = {}   # cluster id -> what changed since then
        self.history: ReviewHistory | None = None
        self._active = False                     # a project is open and encoded
        self._clusters_current = False           # cut since the index last changed
        self._plots_current = False
        self._recut = QTimer(self)
        self._recut.setSingleShot(True)
        self._recut.setInterval(RECUT_DELAY_MS)
        self._recut.timeout.connect(self.refresh)
        self.calibration: Calibration | None = None
        self.project_threshold: ProjectThreshold | None = None
        self._threshold_chosen = False           # the user moved it in this window
        self._edits = 0                          # threshold moves by the user, so far
        self._save = QTimer(self)                # saves the moved threshold once it rests
        self._save.setSingleShot(True)
        self._save.setInterval(SAVE_DELAY_MS)
        self._save.timeout.connect(self._save_threshold)
        self.ask = AskController(bridge, self, threshold=lambda: self.threshold,
                                 opinion=self.opinion)
        self.ask.judged.connect(self._judged_one_by_one)
        self.measure = MeasureController(bridge, lambda: self.threshold, self)
        self.measure.judged.connect(self._judged_one_by_one)
        self.calibrationReady.connect(
            lambda c: self.measure.estimate_at(c.threshold if c is not None else None))
        # Once measured, the estimate follows the slider (the newest threshold only).
        self.thresholdChanged.connect(
            lambda _t: self.measure.refresh() if self.measure.measurement is not None else None)

    # -- lifecycle -------------------------------------------------------------------------
    def project_opened(self) -> None:
        """A new project: forget the old one's clusters and history."""
        self.raw, self.clusters, self.everything = {}, [], []
        self._joined = False
        self.since, self.changes = None, {}
        self.history = None
        self._active = True
        self._threshold_chosen = False
        self._save.stop()
        self.calibration = None
        self.project_threshold = None
        self.ask.reset()
        self.measure.reset()
        self.opinion.reset()
        self.index_changed()
        self.clustersChanged.emit([])
        self.sinceChanged.emit(None)
        self._emit_history("")
        self.load_imports()
        self.load_calibration()   # the status bar shows the project threshold at once

    def index_changed(self) -> None:
        """Rows were added or the model changed: clusters and plots are out of date, and
        the active model's second opinion may be another."""
        self._clusters_current = self._plots_current = False
        self.opinion.refresh()

    def show_clusters(self) -> None:
        """The review is on screen: cut clusters unless done since the last change.
        Clusters and plots are computed when first looked at, not on every open."""
        if not self._clusters_current:
            self._clusters_current = True
            self.load_calibration(then_cut=True)

    def show_plots(self) -> None:
        """The plots are on screen: the cut, the histogram, the verdict curve and the map."""
        self.show_clusters()
        if not self._plots_current:
            self._plots_current = True
            self.load_histogram()
            self.load_curve()
            self.load_map()

    # -- threshold -------------------------------------------------------------------------
    @property
    def threshold_chosen(self) -> bool:
        """The analyst moved the threshold in this window (it is then set by hand)."""
        return self._threshold_chosen

    def set_threshold(self, value: float, *, chosen: bool = True) -> None:
        """Every widget showing the threshold calls this; each re-cut is coalesced. A
        threshold the user `chosen` is saved as the project's, set by hand, once it rests."""
        value = round(min(max(float(value), 0.01), 1.0), 3)
        if value == self.threshold:   # (also each widget's echo of a threshold it was shown)
            return
        if chosen and self._active:   # (the widgets' first values, before any project, are not)
            self._threshold_chosen = True
            self._edits += 1
            self._save.start()
        self.threshold = value
        self.thresholdChanged.emit(value)
        self._recut.start()

    def _save_threshold(self) -> None:
        """Save the window's threshold as the project's, set by hand (a read-only project
        keeps it for this window only, and says so)."""
        value = self.threshold

        def work(job: Job) -> tuple[Calibration | None, ProjectThreshold]:
            project = job.project
            if project.store.read_only:
                return project.verdicts.calibration(), ProjectThreshold(
                    value, BY_HAND, "set in this window; the project is read-only, so not saved")
            calibration = project.verdicts.calibration()
            project.threshold.set_by_hand(value)
            return calibration, project.threshold.current(calibration)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=self._threshold_read,
                        latest=self._key("threshold"))

    def hand_back(self) -> None:
        """Forget the threshold set by hand: the project's is calibrated on the verdicts
        once there are enough, else the model's default, and the slider moves there."""
        self._save.stop()
        self._threshold_chosen = False
        self._edits += 1
        edits = self._edits

        def work(job: Job) -> tuple[Calibration | None, ProjectThreshold]:
            calibration = job.project.verdicts.calibration()
            if not job.project.store.read_only:
                job.project.threshold.set_by_hand(None)
            return calibration, job.project.threshold.current(calibration)

        self.bridge.run(work, pool=Pool.REVIEW,
                        on_done=lambda found: self._threshold_read(found, follow=edits),
                        latest=self._key("threshold"))

    # The button beside the calibration was "Use" (move to the calibrated threshold); with
    # one project threshold, handing back to the calibration is what it does.
    use_calibrated = hand_back

    def load_calibration(self, then_cut: bool = False) -> None:
        """Re-read the calibration and the project threshold; with `then_cut`, cut the
        clusters after, at the project threshold."""
        edits = self._edits

        def work(job: Job) -> tuple[Calibration | None, ProjectThreshold]:
            calibration = job.project.verdicts.calibration()
            return calibration, job.project.threshold.current(calibration)

        def done(found: tuple[Calibration | None, ProjectThreshold]) -> None:
            self._threshold_read(found, follow=edits, recut=not then_cut)
            if then_cut:
                self.refresh()

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done,
                        latest=self._key("first calibration" if then_cut else "calibration"))

    def _threshold_read(self, found: tuple[Calibration | None, ProjectThreshold], *,
                        follow: int | None = None, recut: bool = True) -> None:
        """Show what was read; with `follow` (the count of user moves when it was asked),
        move the window to the project threshold unless the user moved it since (and re-cut
        there, unless the caller cuts next)."""
        calibration, current = found
        self.calibration, self.project_threshold = calibration, current
        self.calibrationReady.emit(calibration)
        self.projectThresholdReady.emit(current)
        if follow is not None and follow == self._edits and not self._save.isActive():
            value = round(current.value, 3)
            if value != self.threshold:
                self.threshold = value
                self.thresholdChanged.emit(value)
                if recut:
                    self._recut.start()

    def _judged_one_by_one(self, _given: int) -> None:
        self._clusters_current = False   # verdicts the clusters shown do not carry yet
        self.load_calibration()

    def set_sort(self, key: str) -> None:
        if key not in SORT_KEYS:
            raise ValueError(key)
        self.sort_key = key
        self.clusters = self._sorted(self.clusters)
        self.clustersChanged.emit(self.clusters)

    def refresh(self) -> None:
        """Re-cut at the current threshold (from the engine's cached neighbour graph)."""
        if not self._active:
            return
        self._recut.stop()
        threshold = self.threshold
        self.busy.emit(f"Finding clusters at {threshold:.2f}…")

        since = self.since

        def work(job: Job) -> tuple[list[Cluster], list[Cluster], dict, bool]:
            project = job.project
            # One cut, as cut and as `Clusters.cut` gives it (the verdicts laid over each
            # cluster, "duplicate" verdicts joining clusters): what exports and counts read.
            raw, applied = project.clusters.cut_both(threshold)
            changes = project.ids.changed_clusters(since, applied) if since else {}
            return raw, applied, changes, _has_joins(raw, applied)

        def done(result: tuple[list[Cluster], list[Cluster], dict, bool]) -> None:
            raw, applied, changes, self._joined = result
            # keyed by id; a cut cluster the verdicts dissolved has none (kept for an undo)
            self.raw = {c.cluster_id or f"-{n}": c for n, c in enumerate(raw)}
            self.everything, self.changes = applied, changes
            self.clusters = self._shown()
            self.busy.emit("")
            self.clustersChanged.emit(self.clusters)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done, latest=self._key("clusters"))

    # -- what changed since an import --------------------------------------------------------
    def load_imports(self) -> None:
        """Read the project's imports for the "since import" choice."""
        self.bridge.run(lambda job: job.project.rows.imports(), pool=Pool.REVIEW,
                        on_done=self.importsReady.emit, latest=self._key("imports"))

    def set_since(self, batch: int | None) -> None:
        """Show only the clusters that changed since import `batch` (new rows joined them,
        they are new, or another cluster merged into them); None shows them all."""
        if batch == self.since:
            return
        self.since = batch
        self.sinceChanged.emit(batch)
        if not self._active or not self.everything:
            return
        clusters = self.everything

        def work(job: Job) -> dict:
            return job.project.ids.changed_clusters(batch, clusters) if batch else {}

        def done(changes: dict) -> None:
            if batch != self.since:
                return
            self.changes = changes
            self.clusters = self._shown()
            self.clustersChanged.emit(self.clusters)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done, latest=self._key("since"))

    def _shown(self) -> list[Cluster]:
        """The clusters the list shows: all, or those changed since the chosen import."""
        if self.since is None:
            return self._sorted(self.everything)
        return self._sorted([c for c in self.everything if c.cluster_id in self.changes])

    def _key(self, what: str) -> str:
        """The `latest` key of this controller's `what` requests."""
        return f"review {what} {id(self)}"

    def _sorted(self, clusters: list[Cluster]) -> list[Cluster]:
        if self.sort_key == "score":
            return sorted(clusters, key=lambda c: (-c.score, -len(c.members), c.cluster_id))
        return sorted(clusters, key=lambda c: (-len(c.members), -c.score, c.cluster_id))

    # -- verdicts --------------------------------------------------------------------------
    def mark(self, cluster: Cluster, item_a: int, item_b: int, verdict: int | None) -> None:
        """Mark two rows of `cluster` duplicate (1) / not duplicate (0) / no verdict (None)."""
        self._decide(cluster, lambda h: h.judge(item_a, item_b, verdict))

    def move_out(self, cluster: Cluster, item_id: int) -> None:
        self._decide(cluster, lambda h: h.move_out(cluster, item_id))

    def set_canonical(self, cluster: Cluster, item_id: int) -> None:
        self._decide(cluster, lambda h: h.set_canonical(cluster, item_id))

    def undo(self) -> None:
        self._decide(None, lambda h: h.undo())

    def redo(self) -> None:
        self._decide(None, lambda h: h.redo())

    def _decide(self, cluster: Cluster | None, action: Callable[[ReviewHistory], object]
                ) -> None:
        """Run a history action on the review thread, then re-apply verdicts to the
        clusters it touched (for undo/redo: the clusters holding the rows it changed)."""
        if not self._active:
            return
        history = self._history()
        raw = self.raw
        # A cluster "duplicate" verdicts joined to others holds rows its cut cluster lacks:
        # laying verdicts over the cut cluster alone would drop them, so the cut is made again.
        joined = self._joined

        def work(job: Job) -> tuple[object, list[Cluster]]:
            try:
                change = action(history)
            except Superseded as exc:   # another analyst's verdict stays; show it and say so
                change = _Note(exc.change, str(exc))
            if cluster is not None:
                touched = [raw[cluster.cluster_id]] if cluster.cluster_id in raw else []
            else:
                rows = _rows_of(change)
                touched = [c for c in raw.values() if rows.intersection(c.item_ids())]
            return change, job.project.clusters.apply_verdicts(touched)

        def done(result: tuple[object, list[Cluster]]) -> None:
            change, updated = result
            if joined:
                self.refresh()
            by_id = {} if joined else {c.cluster_id: c for c in updated}
            self.everything = [by_id.get(c.cluster_id, c) for c in self.everything]
            for pos, shown in enumerate(self.clusters):
                new = by_id.get(shown.cluster_id)
                if new is not None and new != shown:
                    self.clusters[pos] = new
                    self.clusterUpdated.emit(pos, new)
            what = change.note if isinstance(change, _Note) else \
                getattr(change, "description", "") if change else ""
            self._emit_history(what)
            self.load_curve()
            self.load_calibration()

        self.bridge.run(work, pool=Pool.REVIEW, on_done=done)

    def _history(self) -> ReviewHistory:
        if self.history is None:
            project = self.bridge.current_project()
            self.history = ReviewHistory(project.verdicts)
        return self.history

    def _emit_history(self, what: str) -> None:
        h = self.history
        self.historyChanged.emit(bool(h and h.can_undo), bool(h and h.can_redo), what)

    # -- the comparison on screen -----------------------------------------------------------
    def compare_documents(self, item_a: int, item_b: int, mode: str = "clusters") -> None:
        """What two rows' long texts share at the window's threshold (the passages whose
        windows match, the share of each the other holds), for the comparison on screen in
        `mode` ("clusters", "ask", "measure"): a mode's newer request makes its older ones
        stale, never another mode's. A failure is logged and answered None, so the word
        diff stays on screen as for two questions, rather than an error box per pair."""
        threshold = self.threshold

        def failed(message: str, details: str) -> None:
            log.warning("passages of %s and %s not found: %s\n%s", item_a, item_b, message,
                        details)
            self.documentsCompared.emit(item_a, item_b, None)

        self.bridge.run(lambda job: job.project.documents.pair(item_a, item_b, threshold),
                        pool=Pool.REVIEW, on_failed=failed,
                        on_done=lambda pair: self.documentsCompared.emit(item_a, item_b, pair),
                        latest=self._key(f"documents {mode}"))

    # -- plots and export ------------------------------------------------------------------
    def load_histogram(self) -> None:
        self.bridge.run(lambda job: job.project.clusters.histogram(), pool=Pool.REVIEW,
                        on_done=self.histogramReady.emit, latest=self._key("histogram"))

    def load_curve(self) -> None:
        self.bridge.run(lambda job: job.project.verdicts.curve(), pool=Pool.REVIEW,
                        on_done=self.curveReady.emit, latest=self._key("curve"))

    def load_map(self) -> None:
        threshold = self.threshold
        self.bridge.run(lambda job: job.project.clusters.map(threshold), pool=Pool.REVIEW,
                        on_done=self.mapReady.emit, latest=self._key("map"))

    def export(self, path: str, form: str = "all") -> None:
        """Export the rows in `form` (see `Exports.rows`) with the clusters at the current
        threshold, verdicts included."""
        threshold = self.threshold

        def work(job: Job) -> int:
            project = job.project
            return project.exports.rows(path, project.clusters.cut(threshold), threshold,
                                        form=form)

        self.bridge.run(work, pool=Pool.REVIEW, on_done=lambda n: self.exported.emit(path, n))


class _Note:
    """An undo or redo another analyst's change overrode: its change, and what to say."""

    def __init__(self, change: object, note: str) -> None:
        self.change, self.note = change, note


def _rows_of(change: object) -> set[int]:
    """The rows a history change wrote verdicts for (or, refused, would have)."""
    if isinstance(change, _Note):
        return _rows_of(change.change)
    if isinstance(change, VerdictChange):
        return {change.item_a, change.item_b}
    if isinstance(change, CanonicalChange):
        return set(change.item_ids)
    return set()


def _has_joins(raw: list[Cluster], applied: list[Cluster]) -> bool:
    """Whether a cluster as decided holds rows its cut cluster lacks: "duplicate" verdicts
    joined it to rows of other clusters (or of none)."""
    cut = {c.cluster_id: set(c.item_ids()) for c in raw if c.cluster_id}
    return any(c.cluster_id in cut and not set(c.item_ids()) <= cut[c.cluster_id]
               for c in applied)
