"""Long documents in the window: the passages two documents share side by side with the
share of each the other holds, a search hit's passage, a window that a 5,000-word row never
widens past the screen, and what the window says of texts read in several windows (and of
those an earlier version read from their start only, which it can re-encode)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from PySide6.QtWidgets import QTextBrowser

from desktop_app.main_window import MainWindow
from desktop_app.views.compare_panel import passage_colour
from desktop_app.views.score_delegate import BOLD_ROLE
from engine.add_file import ImportChoices
from engine.review.diff import word_diff
from engine.services.asking import AskedPair, AskedRow
from engine.services.measuring import DrawnPair
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS, search_until

SCREEN_WIDTH = 1400    # the narrowest screen the window is made for (the Xvfb walk's)
PLACES = ["the river", "the harbour", "the old mill", "the school", "the market",
          "the bridge", "the library", "the orchard", "the railway", "the chapel",
          "the bakery", "the quarry"]


def chronicle(sentences: int, start: int = 0) -> str:
    """A town's records, one distinct sentence a year (about 17 words each)."""
    return " ".join(
        f"In {1800 + i} the council repaired {PLACES[i % 12]}, heard {i * 7 % 97} complaints "
        f"about {PLACES[(i * 5 + 3) % 12]} and paid {i * 13 % 89} pounds to the masons."
        for i in range(start, start + sentences))


REPORT = chronicle(90)                                   # about 1,500 words
INTRODUCTION = " ".join(                                 # about 300 words, another subject
    f"Weather note {i}: light rain is expected over the northern hills, with winds from the "
    f"west and cooler nights." for i in range(17))
LIGHTHOUSE = " ".join([   # a paragraph about something else, in the book's middle
    "The lighthouse keeper painted the spiral staircase bright yellow every spring.",
    "He climbed the lighthouse tower at dusk to light the great lamp.",
    "The keeper polished the brass lens and trimmed the wick each night.",
    "Storms shook the lighthouse windows while the keeper wrote in his journal.",
    "Every ship that passed the lighthouse was logged by name in the keeper's book.",
    "In winter the keeper carried coal up the yellow staircase to warm the lamp room.",
    "The lighthouse keeper's daughter rowed to the mainland for bread and oil.",
    "Fog horns sounded from the lighthouse when the keeper could not see the rocks.",
    "The keeper repainted the lighthouse stripes red and white after each gale.",
    "Gulls nested on the lighthouse gallery, and the keeper fed them crusts."])
LIGHTHOUSE_QUERY = "the lighthouse keeper painted the staircase yellow and logged the ships"
SHIPS = ["Albatross", "Curlew", "Dauntless", "Endeavour", "Heron", "Kestrel", "Osprey"]


def log_book(days: range) -> str:
    """A ship's log, one distinct entry a day (about 17 words each)."""
    return " ".join(
        f"Day {day}: the {SHIPS[day % 7]} sailed {day * 11 % 83} miles north, sighted "
        f"{day * 3 % 29} whales and mended {day % 5 + 1} sails before dusk." for day in days)


BOOK = f"{log_book(range(150))} {LIGHTHOUSE} {log_book(range(150, 300))}"   # 5,000 words
QUESTION = "How do I reset my router password?"
REWORDED = "How can I reset my wifi router password?"


def rows(path: Path, texts: list[str]) -> Path:
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "text"])
        for n, text in enumerate(texts, 1):
            writer.writerow([f"d{n}", text])
    return path


@pytest.fixture(scope="module")
def documents_project(tmp_path_factory, encoder) -> Path:
    """A closed, encoded project: a report and the same with a new introduction, a 5,000-word
    book twice (the second differs only in spacing, so it is the same text: one encoding),
    and two questions that differ in a word."""
    from engine.project import Project

    folder = tmp_path_factory.mktemp("documents")
    source = rows(folder / "documents.csv",
                  [REPORT, f"{INTRODUCTION} {REPORT}", BOOK, BOOK.replace(". ", ".  "),
                   QUESTION, REWORDED, "What is the capital of France?"])
    path = folder / "documents.duplens"
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(source, ["text"], id_column="id")
        report = project.vectors.encode()
    assert report.windowed == 3          # the report, the longer report, the book
    return path


def open_review(qtbot, window: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        window.tabs.setCurrentWidget(window.review_view)


def show_cluster_of(qtbot, window: MainWindow, public_id: str) -> tuple:
    """Select the cluster holding `public_id` and wait for the answer to what its pair on
    screen shares: (item_a, item_b, DocumentPair | None)."""
    view = window.review_view
    for pos in range(view.clusters_model.rowCount()):
        if public_id in {m.id for m in view.clusters_model.cluster(pos).members}:
            with qtbot.waitSignal(window.review.documentsCompared,
                                  timeout=SIGNAL_TIMEOUT_MS) as blocker:
                view.select_cluster(pos)
            return tuple(blocker.args)
    raise AssertionError(f"{public_id} is in no cluster")


def highlighted(view: QTextBrowser) -> list[tuple[int, int, str]]:
    """(start, end, colour name) of each stretch of the view's text with a background."""
    found = []
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            brush = fragment.charFormat().background()
            if brush.style().name != "NoBrush":
                start = fragment.position()
                colour = brush.color().name(brush.color().NameFormat.HexArgb)
                if found and found[-1][1] == start and found[-1][2] == colour:
                    start = found.pop()[0]
                found.append((start, fragment.position() + fragment.length(), colour))
            it += 1
        block = block.next()
    return found


def test_two_documents_show_their_passages_and_how_much_each_holds(qtbot, window,
                                                                   documents_project):
    open_review(qtbot, window, documents_project)
    item_a, item_b, pair = show_cluster_of(qtbot, window, "d2")
    compare = window.review_view.compare
    assert pair is not None and compare.documents is pair
    assert sorted(r.name for r in compare.rows) == ["d1", "d2"]
    d1_left = compare.rows[0].name == "d1"
    # The report is all in the longer one; the longer one's introduction is not in it.
    held_d1, held_d2 = (pair.held_a, pair.held_b) if d1_left else (pair.held_b, pair.held_a)
    assert held_d1 > 0.99 and held_d2 < 0.9
    line = compare.shares.text()
    assert compare.shares.isVisible()
    assert "d2 holds 100% of d1" in line
    assert f"d1 holds {int(held_d2 * 100)}% of d2" in line
    count = len(pair.passages)
    assert f"{count} matching passage{'' if count == 1 else 's'} at 0.75" in line
    # Both are long enough for a MinHash signature: the runs they share end the line.
    assert pair.runs_shared is not None
    assert line.endswith(f" · {int(pair.runs_shared * 100)}% of 5-word runs shared")
    # Each passage in its colour, the same on both sides; the texts as read, whole.
    assert compare.left.toPlainText() == pair.text_a
    assert compare.right.toPlainText() == pair.text_b
    best = pair.passages[0]
    colour = passage_colour(0).name(passage_colour(0).NameFormat.HexArgb)
    assert any(s <= best.a_start and best.a_end <= e and c == colour
               for s, e, c in highlighted(compare.left))
    assert any(s <= best.b_start and best.b_end <= e and c == colour
               for s, e, c in highlighted(compare.right))
    # The new introduction has no colour (but for the window that reaches into the report),
    # and the longer side opens past it, where the copy starts.
    longer = compare.right if pair.text_b.startswith("Weather") else compare.left
    past_intro = len(INTRODUCTION) // 2
    assert all(start >= past_intro for start, _e, _c in highlighted(longer))
    assert longer.verticalScrollBar().value() > 0
    assert longer.cursorForPosition(longer.viewport().rect().topLeft()).position() >= \
        past_intro


def test_two_questions_keep_the_word_diff(qtbot, window, documents_project):
    open_review(qtbot, window, documents_project)
    _a, _b, pair = show_cluster_of(qtbot, window, "d5")
    compare = window.review_view.compare
    assert pair is None and compare.documents is None and not compare.shares.isVisible()
    left, right = (QUESTION, REWORDED) if compare.rows[0].name == "d5" else \
        (REWORDED, QUESTION)
    assert compare.left.toPlainText() == left and compare.right.toPlainText() == right
    # Exactly the words the word diff marks, and nothing else.
    marked_a, marked_b = word_diff(left, right)
    for view, spans in ((compare.left, marked_a), (compare.right, marked_b)):
        words = [view.toPlainText()[s:e].strip() for s, e, _c in highlighted(view)]
        assert words == [s.text.strip() for s in spans if s.changed]
    assert "wifi" in [compare.right.toPlainText()[s:e].strip()
                      for s, e, _c in highlighted(compare.right)] + \
        [compare.left.toPlainText()[s:e].strip() for s, e, _c in highlighted(compare.left)]


def fits_the_screen(window: MainWindow) -> bool:
    return window.width() <= SCREEN_WIDTH and \
        window.minimumSizeHint().width() <= SCREEN_WIDTH


def test_a_5000_word_row_never_widens_the_window_past_the_screen(qtbot, window,
                                                                 documents_project):
    assert len(BOOK.split()) >= 5000
    open_review(qtbot, window, documents_project)
    book_id, copy_id, pair = show_cluster_of(qtbot, window, "d3")
    assert pair is not None and len(pair.text_a) > 25_000
    qtbot.wait(50)
    assert fits_the_screen(window), (window.width(), window.minimumSizeHint().width())
    # Ask me and Measure quality show a pair of two documents that differ in hundreds of
    # words: the line above the comparison lists a dozen a side (it once widened the
    # window to some 2,500 pixels).
    view = window.review_view
    book, report = AskedRow(book_id, "d3", BOOK), AskedRow(copy_id, "d1", REPORT)
    drawn = DrawnPair(1, book, report, 0.76, "0.7-0.8")
    for mode, show, shown in ((view.set_asking, view.ask_view, AskedPair(book, report, 0.76)),
                              (view.set_measuring, view.measure_view, drawn)):
        mode(True)   # its controller's first pair, then this one
        qtbot.waitUntil(lambda show=show: show.controller.current is not None,
                        timeout=SIGNAL_TIMEOUT_MS)
        show.show_pair(shown)
        qtbot.wait(50)
        assert "differs" in show.score_label.text() or "drawn" in show.score_label.text()
        assert fits_the_screen(window), (window.width(), window.minimumSizeHint().width())
    view.set_measuring(False)
    # Searching a sentence from the book's middle lists the book.
    window.tabs.setCurrentWidget(window.search_page)
    find_the_lighthouse(qtbot, window)
    qtbot.wait(50)
    assert fits_the_screen(window)


def find_the_lighthouse(qtbot, window: MainWindow) -> None:
    """Search a sentence of the book's middle. A short query scores under 0.65 against a
    window of some 200 words (about 0.59 here), so the similar band is opened wider."""
    window.search_panel.similar_floor.spin.setValue(0.4)
    search_until(qtbot, window.search_panel, LIGHTHOUSE_QUERY, "lighthouse")


def test_a_search_hit_in_a_long_text_shows_its_passage(qtbot, window, documents_project):
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(documents_project))
    panel = window.search_panel
    find_the_lighthouse(qtbot, window)
    top = panel.results.item(0)
    label = top.text()
    start, end = top.data(BOLD_ROLE)
    # The passage, in bold, after a few words of what comes before it: not the book's start.
    assert label.startswith("d3 · …") and BOOK[:40] not in label
    assert "lighthouse keeper" in label[start:end]
    assert "lighthouse keeper" in top.toolTip()
    assert len(top.toolTip()) < 1_000
    # A question's hit is as it was: its text from the start, nothing in bold.
    search_until(qtbot, panel, "reset my router password", "router")
    assert panel.results.item(0).data(BOLD_ROLE) is None
    assert panel.texts()[0] in (f"d5 · {QUESTION}", f"d6 · {REWORDED}")


def test_an_import_says_which_texts_were_read_in_several_windows(qtbot, window, tmp_path):
    from tests.desktop_app.conftest import open_in

    open_in(qtbot, window.bridge, tmp_path / "new.duplens", create=True)
    source = rows(tmp_path / "long.csv", [chronicle(30), QUESTION])
    with qtbot.waitSignal(window.imports.finished, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        window.start_import(ImportChoices(str(source), ["text"], "id", None))
    report = blocker.args[0]["encode"]
    assert report.windowed == 1
    said = window.status.currentMessage()
    assert said.endswith(f"; 1 text is longer than one window; each was read whole "
                         f"({report.windows} windows)")


def test_an_old_projects_long_texts_are_re_encoded_from_the_model_menu(
        qtbot, window, tmp_path, encoder, monkeypatch):
    """A project encoded before long texts were read whole: the window says so, names
    Re-encode, and the Model menu's Re-encode long texts reads them whole."""
    from engine.project import Project

    path = tmp_path / "old.duplens"
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(rows(tmp_path / "old.csv", [REPORT, QUESTION]), ["text"],
                                  id_column="id")
        # As a version before windows: the tokenizer gives no offsets, so the long text
        # is read from its start and flagged.
        monkeypatch.setattr(type(encoder), "token_spans", lambda self, texts: None)
        old = project.vectors.encode()
        monkeypatch.undo()
    assert (old.truncated, old.windowed) == (1, 0)
    assert not window.reread_action.isEnabled()
    with qtbot.waitSignal(window.counts.counted, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))
    qtbot.waitUntil(window.reread_action.isEnabled, timeout=SIGNAL_TIMEOUT_MS)
    assert "Re-encode long texts" in window.status.currentMessage()
    assert window.status.reread_button.isVisible()
    with qtbot.waitSignal(window.imports.finished, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        window.reread_action.trigger()
        assert not window.reread_action.isEnabled()          # while it runs
        assert window.job_status.isVisible()                   # progress and Cancel
    result = blocker.args[0]
    assert (result["reread"], result["read_from_start"]) == (1, 0)
    assert window.status.currentMessage().startswith(
        "Re-encoded 1 long texts read from their start before; 1 text is longer than one "
        "window")
    assert not window.reread_action.isEnabled()
    assert not window.status.reread_button.isVisible()


def test_passages_never_take_the_colour_of_what_was_shown_before(qtbot):
    """Qt gives a plain text the format at the cursor: after a word diff whose first word
    was marked, or passages starting at the top, that colour must not spread over the
    next document."""
    from desktop_app.views.compare_panel import ComparePanel, Row
    from engine.documents.window_match import Passage
    from engine.services.documents import DocumentPair

    panel = ComparePanel()
    qtbot.addWidget(panel)
    panel.show()
    text_a, text_b = f"Preface. {REPORT}", f"{INTRODUCTION} {REPORT}"
    rows_ab = (Row(1, "a"), Row(2, "b"))
    panel.show_pair("a", "Snow falls", "b", "Rain falls", rows=rows_ab)
    assert highlighted(panel.left)[0][0] == 0            # the word diff marked the first word
    at = len(INTRODUCTION) + 1
    pair = DocumentPair(text_a, text_b, 0.97, 1.0, 0.8,
                        (Passage(9, len(text_a), at, len(text_b), 0.97),
                         Passage(0, 8, 0, 8, 0.8)), 12, 16, 0.75)
    panel.show_documents(1, 2, pair)
    colours = [passage_colour(n).name(passage_colour(n).NameFormat.HexArgb) for n in (0, 1)]
    assert highlighted(panel.left) == [(0, 8, colours[1]), (9, len(text_a), colours[0])]
    assert highlighted(panel.right) == [(0, 8, colours[1]), (at, len(text_b), colours[0])]
    panel.show_documents(1, 2, pair)                       # again, from passages at the top
    assert highlighted(panel.left) == [(0, 8, colours[1]), (9, len(text_a), colours[0])]
    assert panel.shares.text() == "b holds 100% of a · a holds 80% of b · 2 matching " \
                                  "passages at 0.75"
    signed = DocumentPair(text_a, text_b, 0.86, 0.9, 0.9, pair.passages, 12, 16, 0.75,
                          runs_shared=0.699)     # both have a MinHash signature
    panel.show_documents(1, 2, signed)
    assert panel.shares.text().endswith("2 matching passages at 0.75 · 69% of 5-word runs "
                                        "shared")
    panel.show_documents(2, 1, pair)                       # not the pair on screen
    panel.show_pair("a", "x", "b", "y")
    assert not panel.shares.isVisible() and panel.documents is None


def test_a_passage_excerpt_keeps_the_texts_own_spacing():
    from desktop_app.views.search_panel import passage_excerpt

    text = "Subject to the terms of this License, each Contributor grants You a licence."
    start = text.index(",")
    assert passage_excerpt(text, (start, text.index(" You"))) == (
        "Subject to the terms of this License", ", each Contributor grants",
        " You a licence.")
    long_text = "word " * 40 + "the passage itself" + " and after"
    start = long_text.index("the passage")
    before, match, after = passage_excerpt(long_text, (start, start + 18))
    assert before.startswith("…word") and before.endswith("word ") and len(before) <= 61
    assert (match, after) == ("the passage itself", " and after")
