"""`SearchPanel`: "does this already exist?" answered while the user types.

Keystrokes are debounced (50 ms) so a fast typist sends one search per pause, not one per
letter; the bridge runs it off the GUI thread and drops stale answers, so this panel only
shows whatever `searchResults` delivers. The heading says "This may already exist" only when
the best hit reaches the window's threshold (`set_threshold`, the review's), else "Nothing
close; the nearest are:". While an import still encodes (`set_indexing`) it says the
answer covers the texts indexed so far, and asks again as the index grows (`index_grew`).
"""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QLabel, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from desktop_app.bridge import EngineBridge
from desktop_app.colors import NOTE_STYLE
from desktop_app.job_runner import Pool
from desktop_app.views.score_delegate import ITEM_ID_ROLE, OVERLAP_ROLE, SCORE_ROLE, ScoreDelegate
from engine.review.calibration import DEFAULT_THRESHOLD, format_threshold
from engine.review.overlap import overlap, warm_up

DEBOUNCE_MS = 50
RESULTS = 10
SEARCH_AGAIN_S = 2.0   # while an import encodes, a query on screen is asked again this often


class SearchPanel(QWidget):
    """A query box and the list of the most similar existing rows."""

    hitActivated = Signal(int)  # item_id of the clicked hit

    def __init__(self, bridge: EngineBridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("Type a question…")
        self.query.setClearButtonEnabled(True)
        self.threshold = DEFAULT_THRESHOLD
        self.indexing = False          # an import is still encoding: the index is partial
        self._shown: tuple[str, list] = ("", [])   # the query and hits on screen
        self.title = QLabel("", self)
        self.title.setObjectName("searchTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.status = QLabel("", self)
        self.status.setObjectName("searchStatus")
        self.status.setStyleSheet(NOTE_STYLE)
        self.results = QListWidget(self)
        self.results.setItemDelegate(ScoreDelegate(self.results, lambda: self.threshold))
        self.results.setUniformItemSizes(True)
        self.results.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.query)
        layout.addWidget(self.title)
        layout.addWidget(self.results, 1)
        layout.addWidget(self.status)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self._send)
        self.query.textChanged.connect(self._debounce.start)
        self.results.itemClicked.connect(self._activated)
        self.results.itemActivated.connect(self._activated)
        bridge.searchResults.connect(self.show_results)
        self.shown_seq = 0
        self._overlap_warm = False
        self._searched_at = 0.0        # when a running import last re-ran the search

    def set_threshold(self, value: float) -> None:
        """The window's threshold moved (the review's slider, or the project's read)."""
        self.threshold = float(value)
        self._show_title()
        self._show_status()
        self.results.viewport().update()   # the bars' colours follow it

    def set_indexing(self, on: bool) -> None:
        """An import is encoding (True) or has ended: say what the answers cover."""
        self.indexing = on
        self._show_status()

    def index_grew(self) -> None:
        """An import encoding on committed more texts: a query on screen is asked again, at
        most every `SEARCH_AGAIN_S`, so its answer grows with the index."""
        now = time.monotonic()
        if self.query.text().strip() and now - self._searched_at >= SEARCH_AGAIN_S:
            self._searched_at = now
            self.refresh()

    def project_changed(self) -> None:
        """Another project opened: the hits on screen were the last one's, so they go, and
        the query still typed is asked of this project."""
        self._warm_overlap()
        self._shown = ("", [])
        self.results.clear()
        self._show_title()
        if self.query.text().strip():
            self.refresh()
        else:
            self._show_status()

    def refresh(self) -> None:
        """Search the current text again now (e.g. after an import added rows)."""
        self._debounce.stop()
        self._send()

    def _warm_overlap(self) -> None:
        """The stop words, lemmas and the model's tokenizer are read on first use (a
        fraction of a second): done once on the search thread, as a project opens or before
        the first search, so that no view comparing words (search, Review, Check a file)
        reads them on the GUI thread."""
        if not self._overlap_warm:
            self._overlap_warm = True
            self._bridge.run(lambda _job: warm_up(), pool=Pool.SEARCH)

    def _send(self) -> None:
        self._warm_overlap()
        text = self.query.text()
        self.status.setText("Searching…" if text.strip() else "")
        self._bridge.search(text, RESULTS)

    def show_results(self, seq: int, text: str, hits: list) -> None:
        """Replace the list with `hits` (SearchHit) for request `seq`."""
        self.shown_seq = seq
        self._shown = (text, list(hits))
        self.results.clear()
        for hit in hits:
            copies = f"  (+{hit.copies - 1} identical)" if hit.copies > 1 else ""
            label = f"{hit.id} · {' '.join(hit.text.split())}{copies}"
            item = QListWidgetItem(label)
            item.setData(SCORE_ROLE, float(hit.score))
            item.setData(ITEM_ID_ROLE, int(hit.item_id))
            found = overlap(text, hit.text)
            # A hit at or above the threshold whose meaning flips (a number, negation, an
            # opposite, a name differs) is marked: it is what the analyst checks first.
            marked = found.marked(hit.score, self.threshold)
            item.setData(OVERLAP_ROLE, f"{'≠ ' if marked else ''}∩ {found.jaccard:.2f}")
            item.setToolTip(f"{hit.text}\n\nid {hit.id} · row {hit.row} · "
                            f"similarity {hit.score:.3f} · {found.note()}")
            self.results.addItem(item)
        self._show_title()
        self._show_status()

    def _show_title(self) -> None:
        text, hits = self._shown
        at = format_threshold(self.threshold)
        if not text.strip() or not hits:
            self.title.setText("")
        elif hits[0].score >= self.threshold:
            self.title.setText(f"This may already exist (similarity ≥ {at}):")
        else:
            self.title.setText(f"Nothing close (none reaches {at}); the nearest are:")
        self.title.setVisible(bool(self.title.text()))

    def _show_status(self) -> None:
        text, hits = self._shown
        so_far = " among the texts indexed so far (still encoding)" if self.indexing else ""
        if not text.strip():
            self.status.setText("")
        elif not hits:
            self.status.setText(f"Nothing similar{so_far or ' yet'}.")
        else:
            self.status.setText(f"{len(hits)} most similar rows{so_far}")

    def texts(self) -> list[str]:
        """The labels currently listed (for tests and accessibility checks)."""
        return [self.results.item(i).text() for i in range(self.results.count())]

    def _activated(self, item: QListWidgetItem) -> None:
        self.hitActivated.emit(int(item.data(ITEM_ID_ROLE)))
