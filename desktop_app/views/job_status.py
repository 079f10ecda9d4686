"""The status-bar strip shown while an import runs: bar, rows/s, time left, Cancel.

It shows the engine's `Progress` as it comes (rate and time left are the engine's own
`rate` and `eta_seconds`), so no view computes them again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget

if TYPE_CHECKING:
    from desktop_app.job_runner import JobHandle
    from engine.progress import Progress

STAGES = {"reading": "Reading", "encoding": "Encoding"}


def format_eta(seconds: float | None) -> str:
    """"12 s", "3 min 05 s", "1 h 02 min"; "" when unknown."""
    if seconds is None or seconds < 0:
        return ""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class JobStatus(QWidget):
    """Shows one job's progress; hidden when idle. Cancel stops that job (and emits
    `cancelRequested`)."""

    cancelRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.bar = QProgressBar(self)
        self.bar.setFixedWidth(200)
        self.bar.setTextVisible(True)
        self.label = QLabel("", self)
        self.cancel_button = QPushButton("Cancel", self)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.cancel_button)
        self.cancel_button.clicked.connect(self._cancel)
        self._job: JobHandle | None = None
        self.hide()

    def start(self, title: str, job: JobHandle | None = None) -> None:
        """Show `title` until the first progress report; Cancel stops `job`."""
        self._job = job
        self.label.setText(title)
        self.bar.setRange(0, 0)          # busy until the first report says how much
        self.cancel_button.setEnabled(True)
        self.cancel_button.setText("Cancel")
        self.show()

    def update_progress(self, progress: Progress) -> None:
        done, total = progress.done, progress.total
        name = STAGES.get(progress.stage, progress.stage.capitalize())
        speed = f" · {progress.rate:,.0f} rows/s" if progress.rate > 0 else ""
        if total > 0:
            self.bar.setRange(0, total)
            self.bar.setValue(min(done, total))
            eta = format_eta(progress.eta_seconds)
            left = f" · {eta} left" if eta else ""
            self.label.setText(f"{name} {done:,} / {total:,}{speed}{left}")
        else:
            self.bar.setRange(0, 0)
            self.label.setText(f"{name} {done:,} rows{speed}")

    def stop(self) -> None:
        self._job = None
        self.hide()

    def _cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.cancel_button.setText("Stopping…")
        if self._job is not None:
            self._job.cancel()
        self.cancelRequested.emit()
