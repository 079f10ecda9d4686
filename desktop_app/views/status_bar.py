"""`WindowStatusBar`: what the open project holds, what its model is doing, and the job.

"48 items · all-MiniLM-L6-v2 on cpu · 12 texts not encoded yet · index: 36 texts ·
Loading the model…" on the left (the engine's `info`, rendered whenever it or the model's
state changes); the project threshold and where it comes from ("Threshold 0.77 · model
default", "… · calibrated from 40 verdicts", "… · set by hand"), the one every view and
command uses; **Resume encoding** when a stopped import left texts to encode and nothing
runs; **Re-encode long texts** when an earlier version read some long texts from their start
only (and nothing runs); the running job's strip (`JobStatus`) on the right; and messages
about what just happened over the line for a while.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QLabel, QPushButton, QSizePolicy, QStatusBar, QWidget

from desktop_app.views.job_status import JobStatus
from engine.review.calibration import ProjectThreshold, format_threshold

if TYPE_CHECKING:
    from desktop_app.job_runner import JobHandle

NO_PROJECT = "Open a project, or create one from a spreadsheet."
SEPARATOR = "  ·  "
MESSAGE_MS = 15_000
COUNTING = "Counting rows…"   # a project just opened: its counts come a little later


def describe_project(info: dict | None, encoding: tuple[int, int] | None = None) -> str:
    """The counts of `info` (`bridge.project_info`) in words; a hint when none is open.
    `encoding` (done, total) while an import encodes: the index is filling, and searchable
    as it fills, which "index: empty" would deny."""
    if info is None:
        return NO_PROJECT
    parts = [f"{info['items']:,} items" if "items" in info else COUNTING]
    if info.get("model"):
        device = f" on {info['device']}" if info.get("device") else ""
        parts.append(f"{info['model']}{device}")
    if encoding is not None:
        done, total = encoding
        parts.append(f"encoding {done:,} of {total:,} texts; search covers those done so far")
        return SEPARATOR.join(parts)
    left = _not_encoded(info)
    if left > 0:
        parts.append(f"{left:,} texts not encoded yet")
    parts.append(f"index: {info.get('index_items', 0):,} texts"
                 if info.get("index_items") else "index: empty")
    return SEPARATOR.join(parts)


def describe_threshold(current: ProjectThreshold | None) -> str:
    """"Threshold 0.77 · model default": the project threshold and its source, short."""
    if current is None:
        return ""
    return f"Threshold {format_threshold(current.value)} · {current.short()}"


def _not_encoded(info: dict | None) -> int:
    return info.get("texts", 0) - info.get("encoded", 0) if info else 0


class WindowStatusBar(QStatusBar):
    """The project line, Resume encoding, and the strip of the job that runs."""

    resumeRequested = Signal()
    rereadRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.project = QLabel(NO_PROJECT, self)
        # A long line (counts, the model, an import's progress) is cut at the window's edge,
        # never widens the window past the screen; the whole of it is the label's tooltip.
        self.project.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.threshold = QLabel("", self)
        self.resume_button = QPushButton("Resume encoding", self)
        self.resume_button.setVisible(False)
        self.reread_button = QPushButton("Re-encode long texts", self)
        self.reread_button.setVisible(False)
        self.job = JobStatus(self)
        self.addWidget(self.project, 1)
        self.addPermanentWidget(self.threshold)
        self.addPermanentWidget(self.resume_button)
        self.addPermanentWidget(self.reread_button)
        self.addPermanentWidget(self.job)
        self.resume_button.clicked.connect(self.resumeRequested)
        self.reread_button.clicked.connect(self.rereadRequested)
        self._info: dict | None = None
        self._model_state = ""
        self._busy = False
        self._encoding: tuple[int, int] | None = None
        self._read_from_start = 0

    def show_info(self, info: dict | None) -> None:
        self._info = info
        self._render()

    def show_threshold(self, current: ProjectThreshold | None) -> None:
        """The project threshold and where it comes from (None: no project open)."""
        self.threshold.setText(describe_threshold(current))
        self.threshold.setToolTip(current.describe() if current is not None else "")

    def show_model_state(self, state: str) -> None:
        """"Loading the model…" and the like after the counts ("": nothing to say)."""
        self._model_state = state
        self._render()

    def show_encoding(self, done: int | None, total: int = 0) -> None:
        """An import's encoding has reached `done` of `total` texts (None: it ended)."""
        self._encoding = None if done is None else (done, total)
        self._render()

    def show_read_from_start(self, count: int) -> None:
        """`count` long texts of the open project were read from their start only."""
        self._read_from_start = count
        self.reread_button.setToolTip(
            f"{count:,} long texts were read from their start only, by an earlier version "
            "of Duplens; re-encoding reads them whole, as windows" if count else "")
        self._render()

    def show_opening(self, name: str) -> None:
        """While a project opens; the next `show_info` replaces it."""
        self.project.setText(f"Opening {name}…")

    def show_upgrading(self, name: str, _schema: int) -> None:
        """While an old project's schema steps run as it opens (on a large project of
        documents they remake every signature); the next `show_info` replaces it."""
        self.project.setText(f"Upgrading {name}, saved by an older Duplens…")

    def follow(self, title: str, job: JobHandle) -> None:
        """Show `job`'s strip (its Cancel stops it) until `idle()`."""
        self._busy = True
        self.job.start(title, job)
        self._render()

    def idle(self) -> None:
        self._busy = False
        self._encoding = None
        self.job.stop()
        self._render()

    def say(self, message: str, timeout_ms: int = MESSAGE_MS) -> None:
        """A message about what just happened, over the project line for a while."""
        self.showMessage(message, timeout_ms)

    def _render(self) -> None:
        text = describe_project(self._info, self._encoding)
        line = f"{text}{SEPARATOR}{self._model_state}" if self._model_state else text
        self.project.setText(line)
        self.project.setToolTip(line)
        self.resume_button.setVisible(_not_encoded(self._info) > 0 and not self._busy)
        self.reread_button.setVisible(self._read_from_start > 0 and not self._busy)
