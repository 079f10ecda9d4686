"""The review's top rows: the threshold (slider and box), the clusters' order and summary,
Undo / Redo / Export / Ask me / Measure quality, and the project threshold with where it
comes from, beside the calibrated threshold and what it rests on (its precision and recall
estimated from the random sample once there is one).

A widget of its own because it is shared by the two modes of the review (the clusters and
Ask me) and holds no review state: it shows what the `ReviewController` emits and reports
what the analyst chose.

The box takes what is typed as a whole: it reports a value when the analyst presses Enter,
leaves the box or steps with the arrows, not at each keystroke (no keyboard tracking).
Reporting "0.7" on the way to "0.75" re-cut the clusters and wrote 0.70 back into the box
under the cursor, which then refused the next digit.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from engine.review.calibration import (
    BY_HAND,
    ENOUGH_OF_EACH,
    Calibration,
    ProjectThreshold,
    format_threshold,
)

SLIDER_STEPS = 100          # the slider works in hundredths of similarity
SLIDER_MIN = 50


class ThresholdBar(QWidget):
    """Threshold, order, summary, history buttons and the calibrated threshold."""

    thresholdChosen = Signal(float)
    sortChosen = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.slider = QSlider(Qt.Orientation.Horizontal, self)
        self.slider.setRange(SLIDER_MIN, SLIDER_STEPS)
        self.slider.setPageStep(5)
        self.spin = QDoubleSpinBox(self)
        self.spin.setRange(SLIDER_MIN / SLIDER_STEPS, 1.0)
        self.spin.setSingleStep(0.01)
        self.spin.setDecimals(2)
        self.spin.setKeyboardTracking(False)
        tip = ("The project threshold: the clusters, the exports, the search's \"This may "
               "already exist\", Ask me, Measure quality and a file's check all use it, and "
               "so does the command line. Moving it sets it by hand for the project.")
        self.slider.setToolTip(tip)
        self.spin.setToolTip(tip)
        self.sort = QComboBox(self)
        self.sort.addItem("Largest first", "size")
        self.sort.addItem("Most similar first", "score")
        self.summary = QLabel("", self)
        self.undo_button = QPushButton("Undo", self)
        self.redo_button = QPushButton("Redo", self)
        self.export_button = QPushButton("Export…", self)
        for b in (self.undo_button, self.redo_button):
            b.setEnabled(False)
        self.calibration_label = QLabel("", self)
        self.calibration_label.setWordWrap(True)   # a long reason wraps, never widens the window
        self.use_calibrated_button = QPushButton("Reset", self)
        self.use_calibrated_button.setToolTip(
            "Forget the threshold set by hand: back to the one calibrated on your verdicts "
            "once there are enough, else the model's default")
        self.use_calibrated_button.setEnabled(False)
        self.ask_button = QPushButton("Ask me", self)
        self.ask_button.setCheckable(True)
        self.ask_button.setToolTip("Judge the pairs the model is least sure of (D / N / S)")
        self.measure_button = QPushButton("Measure quality", self)
        self.measure_button.setCheckable(True)
        self.measure_button.setToolTip("Judge pairs drawn at random: precision, recall and "
                                       "the number of duplicates in the whole project")
        self._calibration: Calibration | None = None
        self._project: ProjectThreshold | None = None
        self._estimated = None
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
        top.addWidget(self.measure_button)
        calibration_row = QHBoxLayout()
        calibration_row.addWidget(self.calibration_label, 1)
        calibration_row.addWidget(self.use_calibrated_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addLayout(calibration_row)
        self.show_calibration(None)
        self.slider.valueChanged.connect(lambda v: self.thresholdChosen.emit(v / SLIDER_STEPS))
        self.spin.valueChanged.connect(self.thresholdChosen)
        self.sort.currentIndexChanged.connect(lambda _: self.sortChosen.emit(
            self.sort.currentData()))

    def show_threshold(self, value: float) -> None:
        """Move the slider and spin box to `value` without echoing it back."""
        for widget, v in ((self.slider, round(value * SLIDER_STEPS)), (self.spin, value)):
            widget.blockSignals(True)
            widget.setValue(v)
            widget.blockSignals(False)

    def show_project_threshold(self, project: ProjectThreshold | None) -> None:
        """The project threshold and where it comes from (the controller read it)."""
        self._project = project
        self.show_calibration(self._calibration)

    def show_calibration(self, calibration: Calibration | None) -> None:
        """The project threshold and why it is that, then the calibrated threshold and what
        it rests on, or what calibrating it still needs."""
        self._calibration = calibration
        current = self._project
        if current is None:
            self.calibration_label.setText("")
            self.use_calibrated_button.setEnabled(False)
            return
        project = f"Project threshold {format_threshold(current.value)} ({current.reason})"
        if calibration is None:
            text = (f"{project} · judge pairs duplicate (D) and not duplicate (N): from "
                    f"{ENOUGH_OF_EACH} of each, a threshold is calibrated on them.")
        else:
            e = self._estimated.estimate if self._estimated is not None else None
            if e is not None and abs(e.threshold - calibration.threshold) < 1e-9:
                # From the random sample: the file's precision and recall, not the verdicts';
                # recall as the Measure quality mode quotes it (down to its floor, 0.50).
                r = e.quoted("recall")
                which = ("" if e.floored is None
                         else f" of pairs scoring ≥ {e.floored.floor:.2f}:")
                scores = (f"estimated precision {e.precision.value:.0%} "
                          f"({e.precision.low:.0%}–{e.precision.high:.0%}) · estimated "
                          f"recall{which} {r.value:.0%} ({r.low:.0%}–{r.high:.0%}) from "
                          f"{self._estimated.verdicts:,} random pairs")
            else:
                # Among the verdicts, which are not a random sample of the file (most come
                # from pairs the model ranked close): not the estimate Measure quality shows.
                scores = (f"precision {calibration.precision:.0%} · recall "
                          f"{calibration.recall:.0%} among your verdicts (Measure quality "
                          f"estimates the whole file's)")
            text = (f"{project} · Calibrated threshold {calibration.threshold:.3f} · {scores} "
                    f"· on {calibration.verdicts:,} verdicts ({calibration.positives:,} "
                    f"duplicate, {calibration.negatives:,} not)")
            if not calibration.enough:
                text += f" · used from {ENOUGH_OF_EACH} of each"
        self.calibration_label.setText(text)
        self.use_calibrated_button.setEnabled(current.source == BY_HAND)

    def show_estimated(self, measurement) -> None:
        """The estimate at the calibrated threshold (an `engine.services.measuring.
        Measurement`, or None while there is no random sample)."""
        self._estimated = measurement
        self.show_calibration(self._calibration)

    def show_history(self, can_undo: bool, can_redo: bool, what: str) -> None:
        self.undo_button.setEnabled(can_undo)
        self.redo_button.setEnabled(can_redo)
        self.undo_button.setToolTip(f"Undo: {what}" if what else "")
