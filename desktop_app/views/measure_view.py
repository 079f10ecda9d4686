"""`MeasureView`: the "Measure quality" mode of the review: one drawn pair at a time, and
above it the estimates, updated after every verdict.

The figures (precision, recall, F1, duplicate pairs, rows with a duplicate) each with their
95% interval, what they rest on, and when to stop: once every interval is within ±3 points
it says so; until then, how many more verdicts would halve the widest. Below, the pair side by
side (the review's comparison panel) with D duplicate, N not duplicate, S skip and the
review's Undo (Ctrl+Z), whose keys the review screen forwards here while this mode is shown.

Recall and the duplicate pairs are quoted down to the lowest threshold one can set (the
estimate's floor, 0.50) where pairs score below it, with the whole file's in rows of their
own and a sentence on what the pairs below could hide (`engine.estimation.floor_words`, the
report's words too).
"""

from __future__ import annotations

import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from desktop_app.controllers.measure_controller import MeasureController
from desktop_app.views.compare_panel import ComparePanel, Row
from desktop_app.views.pair_waiting import PairWaiting
from engine.estimation.estimators import Estimate, Figure
from engine.estimation.floor_words import below_floor_words, floor_hint
from engine.services.measuring import DrawnPair, Measurement

COMPARE_HEIGHT = 200
VERDICT_BUTTONS = (("Duplicate (D)", 1), ("Not duplicate (N)", 0), ("Skip (S)", None))
FIGURES = (("precision", "Precision", "of flagged pairs are duplicates", True),
           ("recall", "Recall", "of all duplicate pairs are flagged", True),
           ("recall_all", "Recall, whole file", "every duplicate pair, however low it scores",
            True),
           ("f1", "F1", "precision and recall in one", True),
           ("duplicates", "Duplicate pairs", "in the whole project", False),
           ("duplicates_all", "Duplicate pairs, whole file", "however low they score", False),
           ("rows", "Rows with a duplicate", "what a deduplicated export removes", False))
# The rows shown only where the estimate has a floor, and the hints that change with it.
WHOLE_FILE_ROWS = ("recall_all", "duplicates_all")


class MeasureView(PairWaiting, QWidget):
    """Shows `MeasureController.current` and its `measurement`; the buttons judge the pair."""

    def __init__(self, controller: MeasureController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.intro = QLabel("Pairs drawn at random from the whole project, not chosen by the "
                            "model: your verdicts estimate how right the duplicates are, in "
                            "every pair of the file, with 95% intervals.", self)
        self.intro.setWordWrap(True)
        box = QFrame(self)
        box.setFrameShape(QFrame.Shape.StyledPanel)
        grid = QGridLayout(box)
        self.values: dict[str, QLabel] = {}
        self.hints: dict[str, QLabel] = {}
        self.titles: dict[str, QLabel] = {}
        for row, (key, name, what, _pct) in enumerate(FIGURES):
            title = QLabel(f"<b>{name}</b>", box)
            value = QLabel("—", box)
            value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            hint = QLabel(what, box)
            hint.setStyleSheet("color: palette(mid);")
            grid.addWidget(title, row, 0)
            grid.addWidget(value, row, 1)
            grid.addWidget(hint, row, 2)
            self.values[key], self.hints[key], self.titles[key] = value, hint, title
        grid.setColumnStretch(2, 1)
        # What the pairs below the floor could hide (shown only where there is a floor).
        self.below_floor = QLabel("", box)
        self.below_floor.setWordWrap(True)
        self.below_floor.setTextFormat(Qt.TextFormat.PlainText)
        grid.addWidget(self.below_floor, len(FIGURES), 0, 1, 3)
        # Which clusters the figures describe: the model's cut, not the export's.
        self.scope = QLabel("", box)
        self.scope.setWordWrap(True)
        self.scope.setTextFormat(Qt.TextFormat.PlainText)
        grid.addWidget(self.scope, len(FIGURES) + 1, 0, 1, 3)
        self._show_floor(None)
        self.rests_on = QLabel("No verdicts yet.", self)
        self.rests_on.setWordWrap(True)
        self.advice = QLabel("", self)
        self.advice.setWordWrap(True)
        self.score_label = QLabel("", self)
        self.score_label.setTextFormat(Qt.TextFormat.PlainText)
        # A long line wraps rather than widen the window.
        self.score_label.setWordWrap(True)
        # Questions get a few lines, documents most of the pane (`ComparePanel`).
        self.compare = ComparePanel(self, question_height=COMPARE_HEIGHT)
        self.count_label = QLabel("", self)
        self.buttons: dict[int | None, QPushButton] = {}
        row_layout = QHBoxLayout()
        for text, verdict in VERDICT_BUTTONS:
            button = QPushButton(text, self)
            button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            button.clicked.connect(lambda _=False, v=verdict: controller.judge(v))
            self.buttons[verdict] = button
            row_layout.addWidget(button)
        row_layout.addStretch(1)
        row_layout.addWidget(self.count_label)
        layout = QVBoxLayout(self)
        layout.addWidget(self.intro)
        layout.addWidget(box)
        layout.addWidget(self.rests_on)
        layout.addWidget(self.advice)
        layout.addWidget(self.score_label)
        layout.addWidget(self.compare, 3)
        layout.addLayout(row_layout)
        layout.addStretch(1)
        controller.pairChanged.connect(self.show_pair)
        controller.measured.connect(self.show_measurement)
        controller.judged.connect(
            lambda n: self.count_label.setText(f"{n:,} judged in this session"))
        controller.busy.connect(self._say)
        controller.waiting.connect(self.show_waiting)

    def show_pair(self, pair: DrawnPair | None) -> None:
        for button in self.buttons.values():
            button.setEnabled(pair is not None)
        if pair is None:
            self.compare.clear()
            self.score_label.setText("Every pair of the project has been drawn and judged.")
            return
        self.compare.show_pair(pair.a.public_id, pair.a.text, pair.b.public_id, pair.b.text,
                               rows=(Row(pair.a.item_id, pair.a.public_id),
                                     Row(pair.b.item_id, pair.b.public_id)))
        self.score_label.setText(f"Similarity {pair.similarity:.3f} · drawn from the pairs "
                                 f"{_where(pair.stratum)}")

    def show_measurement(self, m: Measurement) -> None:
        e = m.estimate
        self._show_floor(e)
        self.scope.setText("" if m.scope is None else m.scope.words())
        self.scope.setVisible(m.scope is not None)
        for key, _name, _what, pct in FIGURES:
            self.values[key].setText(_figure(_shown(e, key), pct))
        if e is None:
            self.rests_on.setText("No verdicts yet: judge the pair below (D or N).")
            self.advice.setText("")
            return
        who = ", ".join(f"{name} {n:,}" for name, n in sorted(m.analysts.items()))
        waiting = f"; {m.pending:,} drawn pairs wait" if m.pending else ""
        self.rests_on.setText(f"At threshold {e.threshold:.2f}: {e.flagged:,} pairs flagged · "
                              f"from {m.verdicts:,} verdicts ({who}){waiting}"
                              + ("" if e.ready else " · provisional: some groups of pairs "
                                 "have no verdict yet"))
        if m.enough:
            self.advice.setText("<b>Every interval is within ±3 points: you can stop.</b> "
                                "More verdicts would change little.")
        elif m.widest is not None:
            why = m.why_wide()
            halving = m.halving_words()
            self.advice.setText(f"{halving[0].upper()}{halving[1:]}; stop when every "
                                "interval is within ±3 points." + (f" {why}" if why else ""))

    def _show_floor(self, e: Estimate | None) -> None:
        """Recall and the duplicate pairs down to the floor, the whole file's rows and the
        sentence on the pairs below; without a floor, the figures as they always were."""
        floored = None if e is None else e.floored
        for key in WHOLE_FILE_ROWS:
            for label in (self.titles[key], self.values[key], self.hints[key]):
                label.setVisible(floored is not None)
        hints = {key: what for key, _name, what, _pct in FIGURES}
        if floored is not None:
            hints["recall"] = f"of the duplicate pairs {floor_hint(floored)} are flagged"
            hints["duplicates"] = floor_hint(floored)
            hints["f1"] = f"precision and recall {floor_hint(floored)} in one"
            if floored.rows is not None and e.rows is not None:
                hints["rows"] = (f"with a duplicate {floor_hint(floored)}; counting every "
                                 f"duplicate, {e.rows.low:,.0f} to {e.rows.high:,.0f}")
        for key in ("recall", "duplicates", "f1", "rows"):
            self.hints[key].setText(hints[key])
        self.below_floor.setText("" if floored is None else below_floor_words(floored))
        self.below_floor.setVisible(floored is not None)


def _shown(e: Estimate | None, key: str) -> Figure | None:
    """The figure a row shows: down to the floor for recall and the duplicate pairs where
    the estimate has one, the whole file's in the rows of their own."""
    if e is None:
        return None
    if key == "rows":
        return e.floored.rows if e.floored is not None and e.floored.rows else e.rows
    if key in WHOLE_FILE_ROWS:
        return e.figure(key.removesuffix("_all"))
    if key == "duplicates" and e.floored is not None:
        return e.floored.duplicates
    return e.quoted(key)


def _figure(f: Figure | None, pct: bool) -> str:
    if f is None or not math.isfinite(f.value):
        return "—"
    if pct:
        return f"{f.value:.1%}  ({f.low:.1%} – {f.high:.1%})"
    return f"{f.value:,.0f}  ({f.low:,.0f} – {f.high:,.0f})"


def _where(stratum: str) -> str:
    """A stratum's label as the end of "drawn from the pairs …"."""
    if stratum.startswith("outside the graph"):
        span = stratum.partition(", ")[2]
        return "the index never returned" + (f", of similarity {span}" if span else "")
    if stratum.startswith("below"):
        return f"of similarity {stratum}"
    return f"of similarity {stratum.replace('-', ' to ')}"
