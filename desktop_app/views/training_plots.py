"""The fine-tuning wizard's two plots: the live training loss, and precision against recall
of the model before and after training on the held-out pairs (and, with a second opinion,
the judge's loss and curve beside them).

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
JUDGE_COLOUR = "#7048e8"
JUDGE_PEN = pg.mkPen(JUDGE_COLOUR, width=2, style=Qt.PenStyle.DashLine)
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
    """Training loss against step, redrawn as each logged step arrives; with a second
    opinion, the judge's loss too (its own steps, a dashed curve, named in a legend that
    appears only then: a run without one shows one curve and needs no key)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setLabel("bottom", "Training step")
        self.setLabel("left", "Loss")
        self.getAxis("left").enableAutoSIPrefix(False)
        self.curve = self.plot(pen=LOSS_PEN, symbol="o", symbolSize=4,
                               symbolBrush="#d9480f", symbolPen=None)
        self.judge = self.plot(pen=JUDGE_PEN, symbol="t", symbolSize=5,
                               symbolBrush=JUDGE_COLOUR, symbolPen=None)
        self.legend = pg.LegendItem(offset=(-10, 10))
        self.legend.setParentItem(self.getPlotItem().vb)
        self.legend.hide()
        self._tops = {"model": 0.0, "judge": 0.0}
        self._apply_palette()

    def _apply_palette(self) -> None:
        """The legend in the palette's colours too, on a backing that keeps it readable
        where a curve runs under it."""
        super()._apply_palette()
        legend = getattr(self, "legend", None)  # the base constructor calls this first
        if legend is None:
            return
        palette = self.palette()
        backing = palette.color(QPalette.ColorRole.Base)
        backing.setAlpha(230)
        legend.setBrush(pg.mkBrush(backing))
        legend.setPen(pg.mkPen(palette.color(QPalette.ColorRole.Mid)))
        legend.setLabelTextColor(palette.color(QPalette.ColorRole.Text))

    def set_points(self, steps: Sequence[int], losses: Sequence[float]) -> None:
        self.curve.setData(list(steps), list(losses))
        self._tops["model"] = max(losses, default=0.0)
        self._fit()

    def set_judge_points(self, steps: Sequence[int], losses: Sequence[float]) -> None:
        """The second opinion's loss (empty: none, and the legend goes)."""
        self.judge.setData(list(steps), list(losses))
        self._tops["judge"] = max(losses, default=0.0)
        self.legend.clear()
        if steps:
            self.legend.addItem(self.judge, "second opinion (judge)")
            self.legend.addItem(self.curve, "model")
        self.legend.setVisible(bool(steps))
        self._fit()

    def _fit(self) -> None:
        # Every objective's loss is at least 0: keep 0 in view, so a flat curve reads as
        # flat and not as noise blown up to fill the plot. With the legend shown, room above
        # the curves for it (its two lines are about a fifth of the plot's height).
        top = max(self._tops.values())
        room = 1.3 if self.legend.isVisible() else 1.05
        self.setYRange(0.0, top * room if top > 0 else 1.0, padding=0)

    def points(self) -> int:
        """How many points of the model's loss are drawn (for tests)."""
        xs, _ = self.curve.getData()
        return 0 if xs is None else len(xs)

    def judge_points(self) -> int:
        """How many points of the judge's loss are drawn (for tests)."""
        xs, _ = self.judge.getData()
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
        self.judge = self.plot(pen=JUDGE_PEN)  # named in the legend only when it has data
        self.best = pg.ScatterPlotItem(size=9, pen=None)
        self.addItem(self.best)
        self._judge_best: tuple[float, float] | None = None
        self._bests: list[tuple[tuple[float, float], str]] = []

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
        self._bests = [(before_best, BEFORE_COLOUR), (after_best, AFTER_COLOUR)]
        self._mark_bests()

    def set_judge(self, curve: Sequence | None, best: tuple[float, float] | None = None,
                  name: str = "second opinion (judge)") -> None:
        """The second opinion's curve and best-F1 point beside the two models' (None: no
        second opinion in this run, nothing drawn)."""
        legend = self.getPlotItem().legend
        if legend is not None:
            legend.removeItem(self.judge)
        points = list(curve or ())
        self.judge.setData([p.recall for p in points], [p.precision for p in points])
        self._judge_best = best if points else None
        if points and legend is not None:
            legend.addItem(self.judge, name)
        self._mark_bests()

    def _mark_bests(self) -> None:
        bests = list(self._bests)
        if self._judge_best is not None:
            bests.append((self._judge_best, JUDGE_COLOUR))
        self.best.setData(pos=[p for p, _ in bests], brush=[pg.mkBrush(c) for _, c in bests])
