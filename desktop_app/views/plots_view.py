"""`PlotsView`: the review numbers as pyqtgraph plots, sharing the review threshold.

- Nearest-neighbour similarity histogram with a draggable threshold line.
- Precision, recall and F1 against threshold from the analyst's verdicts, the best-F1
  threshold marked, and a button to apply it.
- A 2-D PCA map of the embeddings coloured by cluster; hovering a point shows its text.

Plot items are created once and their data replaced in place (pyqtgraph's advice); all
numbers come from the engine through the `ReviewController`.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from desktop_app.controllers.review_controller import ReviewController
from engine.pair_metrics import ThresholdCurve
from engine.review.histogram import Histogram
from engine.review.layout import EmbeddingMap

THRESHOLD_PEN = pg.mkPen("#d9480f", width=2)
BEST_PEN = pg.mkPen("#2e9d4f", width=2, style=Qt.PenStyle.DashLine)
NO_CLUSTER = (150, 150, 150, 60)
OTHER_CLUSTER = (70, 130, 180, 120)
TOP_CLUSTERS = 20
MAP_TIP_CHARS = 200


def cluster_brushes(clusters: np.ndarray) -> list:
    """Distinct colours for the largest clusters (ids are numbered biggest first), one muted
    colour for the other clusters, grey for texts in none: thousands of hues would only be
    noise."""
    palette = [pg.mkBrush(pg.intColor(i, hues=TOP_CLUSTERS, maxValue=230, alpha=230))
               for i in range(TOP_CLUSTERS)]
    grey, other = pg.mkBrush(NO_CLUSTER), pg.mkBrush(OTHER_CLUSTER)
    return [grey if c == 0 else palette[c - 1] if c <= TOP_CLUSTERS else other
            for c in clusters.tolist()]


class PlotsView(QWidget):
    """Three tabs of plots; the threshold lines follow and drive the controller."""

    def __init__(self, controller: ReviewController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.tabs = QTabWidget(self)
        self._build_histogram()
        self._build_curve()
        self._build_map()
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs)
        controller.thresholdChanged.connect(self.show_threshold)
        controller.histogramReady.connect(self.show_histogram)
        controller.curveReady.connect(self.show_curve)
        controller.mapReady.connect(self.show_map)
        self.show_threshold(controller.threshold)
        self._apply_palette()

    # -- theme -----------------------------------------------------------------------------
    def _apply_palette(self) -> None:
        """Plots take the window's colours (pyqtgraph defaults to black), light or dark."""
        palette = self.palette()
        background = palette.color(QPalette.ColorRole.Base)
        text = palette.color(QPalette.ColorRole.Text)
        for plot in (self.hist_plot, self.curve_plot, self.map_plot):
            plot.setBackground(background)
            for name in ("left", "bottom"):
                axis = plot.getAxis(name)
                axis.setPen(text)
                axis.setTextPen(text)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self._apply_palette()
        super().changeEvent(event)

    # -- construction ----------------------------------------------------------------------
    def _threshold_line(self, plot: pg.PlotWidget) -> pg.InfiniteLine:
        line = pg.InfiniteLine(angle=90, movable=True, pen=THRESHOLD_PEN,
                               label="threshold {value:.2f}",
                               labelOpts={"position": 0.92, "color": "#d9480f"})
        line.sigPositionChanged.connect(lambda ln: self.controller.set_threshold(ln.value()))
        plot.addItem(line)
        return line

    def _build_histogram(self) -> None:
        self.hist_plot = pg.PlotWidget()
        self.hist_plot.setLabel("bottom", "Similarity to the nearest other row")
        self.hist_plot.setLabel("left", "Rows")
        self.hist_curve = pg.PlotDataItem(stepMode="center", fillLevel=0,
                                          brush=(70, 130, 180, 150), pen=(70, 130, 180))
        self.hist_plot.addItem(self.hist_curve)
        self.hist_line = self._threshold_line(self.hist_plot)
        self.hist_note = QLabel("", self)
        page = QWidget(self)
        lay = QVBoxLayout(page)
        lay.addWidget(self.hist_plot, 1)
        lay.addWidget(self.hist_note)
        self.tabs.addTab(page, "Similarity histogram")

    def _build_curve(self) -> None:
        self.curve_plot = pg.PlotWidget()
        self.curve_plot.setLabel("bottom", "Threshold")
        self.curve_plot.setYRange(0, 1.02)
        self.curve_plot.addLegend(offset=(10, 10))
        self.precision_curve = self.curve_plot.plot(pen=pg.mkPen("#1c7ed6", width=2),
                                                    name="precision")
        self.recall_curve = self.curve_plot.plot(pen=pg.mkPen("#ae3ec9", width=2),
                                                 name="recall")
        self.f1_curve = self.curve_plot.plot(pen=pg.mkPen("#2e9d4f", width=2), name="F1")
        self.best_line = pg.InfiniteLine(angle=90, movable=False, pen=BEST_PEN)
        self.best_line.setVisible(False)
        self.curve_plot.addItem(self.best_line)
        self.curve_line = self._threshold_line(self.curve_plot)
        self.curve_note = QLabel("", self)
        self.curve_note.setWordWrap(True)
        self.apply_best = QPushButton("Use the best-F1 threshold", self)
        self.apply_best.setEnabled(False)
        self.apply_best.clicked.connect(self._apply_best)
        self._best: float | None = None
        row = QHBoxLayout()
        row.addWidget(self.curve_note, 1)
        row.addWidget(self.apply_best)
        page = QWidget(self)
        lay = QVBoxLayout(page)
        lay.addWidget(self.curve_plot, 1)
        lay.addLayout(row)
        self.tabs.addTab(page, "Precision and recall")

    def _build_map(self) -> None:
        self.map_plot = pg.PlotWidget()
        self.map_plot.hideAxis("left")
        self.map_plot.hideAxis("bottom")
        self.map_points = pg.ScatterPlotItem(size=6, pen=None, hoverable=True,
                                             tip=self._tip, hoverSize=10)
        self.map_plot.addItem(self.map_points)
        self.map_note = QLabel("", self)
        self.refresh_map = QPushButton("Redraw at this threshold", self)
        self.refresh_map.clicked.connect(self.controller.load_map)
        row = QHBoxLayout()
        row.addWidget(self.map_note, 1)
        row.addWidget(self.refresh_map)
        page = QWidget(self)
        lay = QVBoxLayout(page)
        lay.addWidget(self.map_plot, 1)
        lay.addLayout(row)
        self.tabs.addTab(page, "Map")

    # -- rendering -------------------------------------------------------------------------
    def show_threshold(self, value: float) -> None:
        # Not blocking the line's signal, so its label follows; the echo back to the
        # controller carries the same value and stops there.
        for line in (self.hist_line, self.curve_line):
            if abs(line.value() - value) > 1e-9:
                line.setValue(value)

    def show_histogram(self, hist: Histogram) -> None:
        self.hist_curve.setData(hist.edges, hist.counts)
        self.hist_plot.setXRange(float(hist.edges[0]), 1.0, padding=0.02)
        self.hist_note.setText(f"{hist.total:,} distinct texts; drag the line to move the "
                               f"threshold.")

    def show_curve(self, curve: ThresholdCurve) -> None:
        if not curve.usable:
            for item in (self.precision_curve, self.recall_curve, self.f1_curve):
                item.setData([], [])
            self.best_line.setVisible(False)
            self.apply_best.setEnabled(False)
            self._best = None
            self.curve_note.setText(
                f"{curve.positives} duplicate and {curve.negatives} not-duplicate verdicts. "
                f"Give at least one of each in Review to see precision and "
                f"recall against the threshold.")
            return
        t = curve.thresholds
        self.curve_plot.setXRange(float(t.min()), 1.0, padding=0.02)
        self.precision_curve.setData(t, curve.precision)
        self.recall_curve.setData(t, curve.recall)
        self.f1_curve.setData(t, curve.f1)
        self._best = curve.best_threshold
        self.best_line.setValue(curve.best_threshold)
        self.best_line.setVisible(True)
        self.apply_best.setEnabled(True)
        self.apply_best.setText(f"Use the best-F1 threshold ({curve.best_threshold:.2f})")
        self.curve_note.setText(
            f"From {curve.positives} duplicate and {curve.negatives} not-duplicate "
            f"verdicts: best F1 {curve.best_f1:.2f} at {curve.best_threshold:.3f}, average "
            f"precision {curve.average_precision:.2f}.")

    def _apply_best(self) -> None:
        if self._best is not None:
            self.controller.set_threshold(self._best)

    def show_map(self, emap: EmbeddingMap) -> None:
        self._map_texts = emap.texts
        data = np.arange(len(emap.texts))
        # Clustered points last, so they are drawn over the grey ones.
        order = np.argsort(emap.cluster > 0, kind="stable")
        self.map_points.setData(pos=emap.xy[order], data=data[order],
                                brush=cluster_brushes(emap.cluster[order]))
        clustered = int((emap.cluster > 0).sum())
        self.map_note.setText(
            f"{len(emap.texts):,} texts (PCA of the embeddings); {clustered:,} are in "
            f"clusters: the {TOP_CLUSTERS} largest in their own colours, the others blue. "
            f"Hover for the text.")

    def _tip(self, x: float, y: float, data: object) -> str:
        texts = getattr(self, "_map_texts", [])
        try:
            text = texts[int(data)]  # type: ignore[arg-type]
        except (TypeError, ValueError, IndexError):
            return ""
        return text if len(text) <= MAP_TIP_CHARS else text[:MAP_TIP_CHARS] + "…"
