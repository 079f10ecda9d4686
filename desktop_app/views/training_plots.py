"""The fine-tuning wizard's two plots: the live training loss, and precision against recall
of the model before and after training on the held-out pairs.

Each creates its plot items once and replaces their data in place (pyqtgraph's advice for
live plots), and takes the window's colours, light or dark, as the review plots do.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QFontMetrics, QPalette
from PySide6.QtWidgets import QWidget

LOSS_PEN = pg.mkPen("#d9480f", width=2)
BEFORE_COLOUR = "#868e96"
AFTER_COLOUR = "#1c7ed6"


class _ThemedPlot(pg.PlotWidget):
    """A PlotWidget drawn in the palette's Base and Text colours (pyqtgraph defaults to
    black), following palette changes."""

    def __init__(self, parent: QWidget | None = None) -> None:
        self._built = False  # PlotWidget's own constructor already sends palette events
        super().__init__(parent)
        self._built = True
        self.setMinimumHeight(180)
        # Room above the plot for half a tick label: a tick at the top of the range (1.0 of
        # a loss that starts near 0.95) has its label centred on the plot's top edge, and
        # without this its upper half was cut off.
        top = QFontMetrics(self.font()).height() // 2 + 2
        self.getPlotItem().layout.setContentsMargins(1, top, 1, 1)
        self._apply_palette()

    def _apply_palette(self) -> None:
        palette = self.palette()
        self.setBackground(palette.color(QPalette.ColorRole.Base))
        text = palette.color(QPalette.ColorRole.Text)
        for name in ("left", "bottom"):
            axis = self.getAxis(name)
            axis.setPen(text)
            axis.setTextPen(text)

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        if self._built and event.type() in (QEvent.Type.PaletteChange,
                                            QEvent.Type.ApplicationPaletteChange):
            self._apply_palette()
        super().changeEvent(event)


class LossPlot(_ThemedPlot):
    """Training loss against step, redrawn as each logged step arrives."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setLabel("bottom", "Training step")
        self.setLabel("left", "Loss")
        self.getAxis("left").enableAutoSIPrefix(False)
        self.curve = self.plot(pen=LOSS_PEN, symbol="o", symbolSize=4,
                               symbolBrush="#d9480f", symbolPen=None)

    def set_points(self, steps: Sequence[int], losses: Sequence[float]) -> None:
        self.curve.setData(list(steps), list(losses))
        # Every objective's loss is at least 0: keep 0 in view, so a flat curve reads as
        # flat and not as noise blown up to fill the plot.
        top = max(losses, default=0.0)
        self.setYRange(0.0, top * 1.05 if top > 0 else 1.0, padding=0)

    def points(self) -> int:
        """How many points are drawn (for tests)."""
        xs, _ = self.curve.getData()
        return 0 if xs is None else len(xs)


class PrecisionRecallPlot(_ThemedPlot):
    """Precision against recall of two models, each with its best-F1 point marked."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setLabel("bottom", "Recall")
        self.setLabel("left", "Precision")
        self.setXRange(0, 1.0, padding=0.02)
        self.setYRange(0, 1.0, padding=0.02)
        self.addLegend(offset=(-10, -10))
        self.before = self.plot(pen=pg.mkPen(BEFORE_COLOUR, width=2,
                                             style=Qt.PenStyle.DashLine), name="before")
        self.after = self.plot(pen=pg.mkPen(AFTER_COLOUR, width=2), name="after")
        self.best = pg.ScatterPlotItem(size=9, pen=None)
        self.addItem(self.best)

    def set_curves(self, before: Sequence, after: Sequence, before_best: tuple[float, float],
                   after_best: tuple[float, float], names: tuple[str, str]) -> None:
        """`before`/`after`: the engine's CurvePoints; `*_best`: (recall, precision) at the
        best-F1 threshold, 0-1; `names`: the legend's labels for the two models."""
        self.before.setData([p.recall for p in before], [p.precision for p in before])
        self.after.setData([p.recall for p in after], [p.precision for p in after])
        legend = self.getPlotItem().legend
        if legend is not None:
            for item, name in zip((self.before, self.after), names, strict=True):
                legend.removeItem(item)
                legend.addItem(item, name)
        self.best.setData(pos=[before_best, after_best],
                          brush=[pg.mkBrush(BEFORE_COLOUR), pg.mkBrush(AFTER_COLOUR)])
