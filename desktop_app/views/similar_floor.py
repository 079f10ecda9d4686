"""`SimilarFloor`: "Show similar from [0.65]", the floor of the search's similar band.

The user picks it (`search_bands.DEFAULT_FLOOR` until they do, and why that) and it is kept
in QSettings, so a floor chosen once holds in every project and after a restart. It never
exceeds the window's threshold: the box cannot go above it, and a threshold moved under the
chosen floor shows the threshold (no similar band) while remembering the choice, which
holds again once the threshold moves back up.
"""

from __future__ import annotations

from PySide6.QtCore import QSettings, QSignalBlocker, Signal
from PySide6.QtWidgets import QDoubleSpinBox, QHBoxLayout, QLabel, QWidget

from desktop_app.views.search_bands import DEFAULT_FLOOR, floor_in_force
from engine.review.calibration import DEFAULT_THRESHOLD

FLOOR_KEY = "search/similar_from"


def read_floor(settings: QSettings | None) -> float:
    """The floor kept in `settings`, or the default when none is (or it is not a number)."""
    if settings is None:
        return DEFAULT_FLOOR
    try:
        value = float(settings.value(FLOOR_KEY, DEFAULT_FLOOR))   # an .ini gives a str
    except (TypeError, ValueError):
        return DEFAULT_FLOOR
    return min(max(value, 0.0), 1.0)


class SimilarFloor(QWidget):
    """A label and a spin box; `floor` is the floor in force (never above the threshold)."""

    floorChanged = Signal(float)   # the floor in force, after the user changed it

    def __init__(self, settings: QSettings | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._settings = settings
        self.chosen = read_floor(settings)
        self.threshold = DEFAULT_THRESHOLD
        self.spin = QDoubleSpinBox(self)
        self.spin.setObjectName("similarFrom")
        self.spin.setDecimals(2)
        self.spin.setSingleStep(0.01)
        self.spin.setMinimum(0.0)
        # Typing "0.7" is one choice, not a "0" and then a "0.7" each kept and searched.
        self.spin.setKeyboardTracking(False)
        tip = ("Hits under the threshold but at or above this are listed apart, as similar "
               "(not called duplicates); hits under it are not listed. It never goes above "
               "the threshold; at the threshold there is no similar band.")
        self.spin.setToolTip(tip)
        label = QLabel("Show similar from", self)
        label.setBuddy(self.spin)
        label.setToolTip(tip)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(label)
        layout.addWidget(self.spin)
        self._show()
        self.spin.valueChanged.connect(self._chosen)

    @property
    def floor(self) -> float:
        return floor_in_force(self.chosen, self.threshold)

    def set_threshold(self, value: float) -> None:
        """The window's threshold moved: the box's ceiling, and the floor shown, follow."""
        self.threshold = float(value)
        self._show()

    def _show(self) -> None:
        with QSignalBlocker(self.spin):    # the user's choice is kept, not the clamped value
            self.spin.setMaximum(self.threshold)
            self.spin.setValue(self.floor)

    def _chosen(self, value: float) -> None:
        self.chosen = round(float(value), 2)
        if self._settings is not None:
            self._settings.setValue(FLOOR_KEY, self.chosen)
        self.floorChanged.emit(self.floor)
