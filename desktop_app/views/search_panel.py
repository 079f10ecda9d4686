"""`SearchPanel`: "does this already exist?" answered while the user types.

Keystrokes are debounced (50 ms) so a fast typist sends one search per pause, not one per
letter; the bridge runs it off the GUI thread and drops stale answers, so this panel only
shows whatever `searchResults` delivers. The answer is listed in two bands
(`search_bands`): the hits at or above the window's threshold (`set_threshold`, the
review's) under "This may already exist", then the near misses down to the floor the user
picks (`similar_floor`, "Show similar from"), muted, behind a "Similar, below the
threshold" row, or under "Nothing reaches 0.80 · 3 similar from 0.65" when none reaches the
threshold; hits under the floor are not listed. A band's heading row cannot be selected,
so the arrow keys step from the last hit of one band to the first of the next. While an
import still encodes (`set_indexing`) it says the answer covers the texts indexed so far,
and asks again as the index grows (`index_grew`). A long text's hit shows the passage
nearest the query (`SearchHit.passage`), in bold after a few words of what comes before it,
rather than the text's beginning, which may be about something else; its words' overlap
and tooltip are the passage's too.
"""

from __future__ import annotations

import textwrap
import time

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from desktop_app.bridge import EngineBridge
from desktop_app.colors import NOTE_STYLE
from desktop_app.job_runner import Pool
from desktop_app.views import search_bands
from desktop_app.views.score_delegate import (
    BOLD_ROLE,
    ITEM_ID_ROLE,
    OVERLAP_ROLE,
    SCORE_ROLE,
    ScoreDelegate,
)
from desktop_app.views.similar_floor import SimilarFloor
from engine.review.calibration import DEFAULT_THRESHOLD, format_threshold
from engine.review.overlap import overlap, warm_up

DEBOUNCE_MS = 50
RESULTS = 10
SEARCH_AGAIN_S = 2.0   # while an import encodes, a query on screen is asked again this often
BAND_ROLE = Qt.ItemDataRole.UserRole + 20   # EXISTS, SIMILAR, or HEADING (a band's title row)
EXISTS, SIMILAR, HEADING = "exists", "similar", "heading"
BEFORE_PASSAGE = 60     # characters of context shown before a passage
LINE_CHARS = 2_000      # more than a line shows: a long text's label is cut here
TOOLTIP_CHARS = 600     # a hit's tooltip shows this much of its text or passage


def passage_excerpt(text: str, passage: tuple[int, int]) -> tuple[str, str, str]:
    """(before, passage, after) of `text` for one line: a few words before the passage
    ("…" where cut), the passage, and what follows, each with its spaces folded."""
    start, end = passage
    head = text[max(0, start - BEFORE_PASSAGE):start]
    cut = start > BEFORE_PASSAGE
    if cut and " " in head:
        head = head.split(" ", 1)[1]         # from a word's start
    before = " ".join(head.split())
    # A space between the parts only where the text has one (a passage may start at a comma).
    space = " " if before and head[-1:].isspace() else ""
    before = f"{'…' if cut else ''}{before}{space}"
    tail = text[end:end + LINE_CHARS]
    after = " ".join(tail.split())
    return (before, " ".join(text[start:end].split()),
            f"{' ' if tail[:1].isspace() else ''}{after}" if after else "")


def _short(text: str) -> str:
    """A tooltip's share of a long text (a short one whole, as it was)."""
    if len(text) <= TOOLTIP_CHARS:
        return text
    return textwrap.shorten(text, TOOLTIP_CHARS, placeholder=" …")


class BandDelegate(ScoreDelegate):
    """A hit as `ScoreDelegate` paints it (bar, number, overlap); a band's heading row as
    plain text, with no bar or number of its own."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        if index.data(BAND_ROLE) == HEADING:
            QStyledItemDelegate.paint(self, painter, option, index)
        else:
            super().paint(painter, option, index)


class SearchPanel(QWidget):
    """A query box, the floor of the similar band, and the most similar existing rows in
    their bands. `settings` keeps the floor between runs (None: not kept)."""

    hitActivated = Signal(int)  # item_id of the clicked hit

    def __init__(self, bridge: EngineBridge, parent: QWidget | None = None,
                 settings: QSettings | None = None) -> None:
        super().__init__(parent)
        self._bridge = bridge
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("Type a question…")
        self.query.setClearButtonEnabled(True)
        self.similar_floor = SimilarFloor(settings, self)
        self.threshold = DEFAULT_THRESHOLD
        self.similar_floor.set_threshold(self.threshold)
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
        self.results.setItemDelegate(BandDelegate(self.results, lambda: self.threshold))
        self.results.setUniformItemSizes(True)
        self.results.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        query_row = QHBoxLayout()
        query_row.addWidget(self.query, 1)
        query_row.addWidget(self.similar_floor)
        layout.addLayout(query_row)
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
        self.similar_floor.floorChanged.connect(lambda _floor: self._show_hits())
        # Type, then Tab to the hits (as before the floor's box came); the box comes last.
        self.setTabOrder(self.query, self.results)
        self.setTabOrder(self.results, self.similar_floor.spin)
        bridge.searchResults.connect(self.show_results)
        self.shown_seq = 0
        self._overlap_warm = False
        self._searched_at = 0.0        # when a running import last re-ran the search

    def set_threshold(self, value: float) -> None:
        """The window's threshold moved (the review's slider, or the project's read): the
        floor's ceiling, which band each hit is in, and the bars' colours follow it."""
        self.threshold = float(value)
        self.similar_floor.set_threshold(self.threshold)
        self._show_hits()

    @property
    def floor(self) -> float:
        """The similar band's floor in force (never above the threshold)."""
        return self.similar_floor.floor

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
        self._show_hits()

    def _bands(self) -> search_bands.Bands:
        text, hits = self._shown
        return search_bands.split(hits if text.strip() else [], self.threshold, self.floor)

    def _show_hits(self) -> None:
        """List the hits on screen in their bands (again after the threshold or the floor
        moved: the same answer, no new search), the current hit kept current."""
        current = self.results.currentItem()
        keep = current.data(ITEM_ID_ROLE) if current is not None else None
        self.results.clear()
        bands = self._bands()
        for hit in bands.exists:
            self.results.addItem(self._hit_item(hit, EXISTS))
        if bands.exists and bands.similar:
            self.results.addItem(self._heading_item(
                search_bands.similar_heading(self.threshold, self.floor)))
        for hit in bands.similar:
            self.results.addItem(self._hit_item(hit, SIMILAR))
        for row in range(self.results.count()):
            if keep is not None and self.results.item(row).data(ITEM_ID_ROLE) == keep:
                self.results.setCurrentRow(row)
        self._show_title()
        self._show_status()

    def _hit_item(self, hit, band: str) -> QListWidgetItem:
        """One hit's row; a similar one in the muted colour and said to be under the
        threshold, so it is never read as "may already exist"."""
        text = self._shown[0]
        copies = f"  (+{hit.copies - 1} identical)" if hit.copies > 1 else ""
        passage = hit.passage
        shown = hit.text
        if passage is not None:
            before, match, after = passage_excerpt(hit.text, passage)
            head = f"{hit.id} · {before}"
            item = QListWidgetItem(f"{head}{match}{after}"[:LINE_CHARS] + copies)
            item.setData(BOLD_ROLE, (len(head), len(head) + len(match)))
            shown = f"…{match}…"
        else:
            item = QListWidgetItem(f"{hit.id} · {' '.join(hit.text[:LINE_CHARS].split())}"
                                   f"{copies}")
        item.setData(SCORE_ROLE, float(hit.score))
        item.setData(ITEM_ID_ROLE, int(hit.item_id))
        item.setData(BAND_ROLE, band)
        # A document's overlap with the query is its passage's: the rest of it is not what
        # matched (and words of thousands, on the GUI thread, per hit, would be slow).
        found = overlap(text, hit.matched_text())
        # A hit at or above the threshold whose meaning flips (a number, negation, an
        # opposite, a name differs) is marked: it is what the analyst checks first.
        marked = found.marked(hit.score, self.threshold)
        item.setData(OVERLAP_ROLE, f"{'≠ ' if marked else ''}∩ {found.jaccard:.2f}")
        where = ""
        if band == SIMILAR:
            item.setForeground(self.results.palette().color(QPalette.ColorRole.PlaceholderText))
            where = f"similar, below the threshold {format_threshold(self.threshold)} · "
            item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, where.rstrip(" ·"))
        item.setToolTip(f"{_short(shown)}\n\n{where}id {hit.id} · row {hit.row} · "
                        f"similarity {hit.score:.3f} · {found.note()}")
        return item

    def _heading_item(self, label: str) -> QListWidgetItem:
        """A band's title row: not selectable, so the keys and clicks pass over it; bold in
        the text colour (not the pale one of a disabled row), above the muted hits."""
        item = QListWidgetItem(label)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        item.setForeground(self.results.palette().color(QPalette.ColorRole.Text))
        item.setData(BAND_ROLE, HEADING)
        font = item.font()
        font.setBold(True)
        item.setFont(font)
        return item

    def _show_title(self) -> None:
        self.title.setText(search_bands.headline(self._bands(), self.threshold, self.floor))
        self.title.setVisible(bool(self.title.text()))

    def _show_status(self) -> None:
        text = self._shown[0]
        so_far = " among the texts indexed so far (still encoding)" if self.indexing else ""
        self.status.setText(search_bands.summary(self._bands(), self.floor, so_far)
                            if text.strip() else "")

    def texts(self) -> list[str]:
        """The hits' labels as listed, best first (a band's heading row is not a hit), for
        tests and accessibility checks."""
        return [item.text() for item in self._items() if item.data(BAND_ROLE) != HEADING]

    def bands(self) -> list[str]:
        """Each listed row's band (EXISTS, SIMILAR or HEADING), top first."""
        return [item.data(BAND_ROLE) for item in self._items()]

    def _items(self) -> list[QListWidgetItem]:
        return [self.results.item(i) for i in range(self.results.count())]

    def _activated(self, item: QListWidgetItem) -> None:
        if item.data(BAND_ROLE) != HEADING:
            self.hitActivated.emit(int(item.data(ITEM_ID_ROLE)))
