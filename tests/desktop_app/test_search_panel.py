"""The search's two bands: hits at or above the threshold ("This may already exist"), then
the near misses down to a floor the user picks, listed apart and muted; nothing under it.

The issue: three clear paraphrases scored 0.72-0.75 against the 0.80 threshold and the
panel said "Nothing close". The similarities quoted below are the session model's on
tests/data/questions.csv.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QPalette

from desktop_app.views import search_bands
from desktop_app.views.score_delegate import ITEM_ID_ROLE
from desktop_app.views.search_panel import EXISTS, HEADING, SIMILAR, SearchPanel
from desktop_app.views.similar_floor import FLOOR_KEY, SimilarFloor
from engine.keystroke_search import SearchHit
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS, open_in

# q31 "How can I get red wine out of carpet?" 0.751, q30 "How do I remove a red wine stain
# from a carpet?" 0.707, then q50 0.283: two paraphrases under 0.80, nothing else near.
WINE = "how to get rid of wine spills on a rug"


def _hit(item_id: int, score: float) -> SearchHit:
    return SearchHit(f"q{item_id}", item_id, f"text {item_id}", score, item_id, 1, 1)


def _ids(panel: SearchPanel) -> list[str]:
    return [label.split(" · ")[0] for label in panel.texts()]


def _type(qtbot, panel: SearchPanel, text: str) -> None:
    """Type `text` and wait until its own answer is on screen."""
    answered: list = []
    panel._bridge.searchResults.connect(
        lambda _seq, query, _hits: answered.append(query) if query == text else None)
    panel.query.clear()
    qtbot.keyClicks(panel.query, text)
    qtbot.waitUntil(lambda: bool(answered) and panel._shown[0] == text,
                    timeout=SIGNAL_TIMEOUT_MS)


def _choose_floor(qtbot, panel: SearchPanel, text: str) -> None:
    """Type a floor into the box as a user does: select it, type, Enter."""
    spin = panel.similar_floor.spin
    spin.setFocus()
    spin.selectAll()
    qtbot.keyClicks(spin, text)
    qtbot.keyClick(spin, Qt.Key.Key_Return)


@pytest.fixture
def panel(qtbot, bridge, questions_project, settings) -> SearchPanel:
    open_in(qtbot, bridge, questions_project)
    shown = SearchPanel(bridge, None, settings)
    qtbot.addWidget(shown)
    shown.show()
    return shown


def test_hits_split_into_the_bands_and_the_words_say_which():
    hits = [_hit(1, 0.91), _hit(2, 0.74), _hit(3, 0.66), _hit(4, 0.40)]
    bands = search_bands.split(hits, 0.80, 0.65)
    assert [h.id for h in bands.exists] == ["q1"]
    assert [h.id for h in bands.similar] == ["q2", "q3"]
    assert bands.hidden == 1 and bands.listed == 3
    assert search_bands.headline(bands, 0.80, 0.65) == "This may already exist (similarity ≥ 0.80):"
    near = search_bands.split(hits[1:], 0.80, 0.65)
    assert search_bands.headline(near, 0.80, 0.65) == "Nothing reaches 0.80 · 2 similar from 0.65:"
    far = search_bands.split(hits[3:], 0.80, 0.65)
    assert not far.listed and far.hidden == 1
    assert (search_bands.headline(far, 0.80, 0.65)
            == "Nothing close (none reaches 0.80, none similar from 0.65)")
    assert search_bands.summary(far, 0.65).startswith("The nearest scores 0.40, under 0.65")
    assert search_bands.headline(far, 0.80, 0.80) == "Nothing close (none reaches 0.80)"
    assert search_bands.floor_in_force(0.65, 0.60) == 0.60     # never above the threshold


def test_paraphrases_under_the_threshold_are_listed_as_similar_and_marked(qtbot, panel):
    assert panel.floor == search_bands.DEFAULT_FLOOR == 0.65
    _type(qtbot, panel, WINE)
    assert _ids(panel) == ["q31", "q30"]          # q50 (0.28) is under the floor: not listed
    assert panel.bands() == [SIMILAR, SIMILAR]
    assert panel.title.text() == "Nothing reaches 0.80 · 2 similar from 0.65:"
    assert panel.status.text() == "2 most similar rows"
    muted = panel.results.palette().color(QPalette.ColorRole.PlaceholderText)
    top = panel.results.item(0)
    assert top.foreground().color() == muted
    assert "similar, below the threshold 0.80" in top.toolTip()

    # A threshold moved under the best hit: it may already exist, the other stays similar,
    # parted from it by a heading row the arrow keys pass over.
    panel.set_threshold(0.74)
    assert _ids(panel) == ["q31", "q30"]
    assert panel.bands() == [EXISTS, HEADING, SIMILAR]
    assert panel.results.item(1).text() == "Similar, below the threshold 0.74 (from 0.65)"
    assert panel.title.text() == "This may already exist (similarity ≥ 0.74):"
    assert panel.results.item(0).foreground().color() != muted
    panel.activateWindow()
    panel.query.setFocus()
    qtbot.waitUntil(panel.query.hasFocus, timeout=5_000)
    qtbot.keyClick(panel.query, Qt.Key.Key_Tab)        # from the box to the hits, as before
    assert panel.results.hasFocus()
    panel.results.setCurrentRow(0)
    activated: list[int] = []
    panel.hitActivated.connect(activated.append)
    qtbot.keyClick(panel.results, Qt.Key.Key_Down)
    assert panel.results.currentItem().text().startswith("q30 · ")
    qtbot.keyClick(panel.results, Qt.Key.Key_Return)
    qtbot.keyClick(panel.results, Qt.Key.Key_Up)
    assert panel.results.currentItem().text().startswith("q31 · ")
    assert activated == [panel.results.item(2).data(ITEM_ID_ROLE)]


def test_a_hit_under_the_floor_is_not_listed_and_the_floor_follows_the_threshold(qtbot,
                                                                                  panel):
    _type(qtbot, panel, WINE)
    _choose_floor(qtbot, panel, "0.73")
    assert panel.floor == 0.73
    assert _ids(panel) == ["q31"]                 # q30 (0.707) is now under the floor
    assert panel.title.text() == "Nothing reaches 0.80 · 1 similar from 0.73:"

    # The threshold moved under the chosen floor: the floor in force is the threshold (no
    # similar band), the box cannot go above it; moved back, the choice holds again.
    panel.set_threshold(0.70)
    assert panel.floor == 0.70 and panel.similar_floor.spin.value() == 0.70
    assert panel.similar_floor.spin.maximum() == 0.70
    assert panel.bands() == [EXISTS, EXISTS]
    panel.set_threshold(0.80)
    assert panel.floor == 0.73 and panel.similar_floor.spin.value() == 0.73
    assert _ids(panel) == ["q31"]

    _choose_floor(qtbot, panel, "0.8")             # at the threshold: no similar band
    assert panel.results.count() == 0
    assert panel.title.text() == "Nothing close (none reaches 0.80)"
    assert panel.status.text().startswith("The nearest scores 0.75, under 0.80")


def test_the_floor_is_remembered_across_runs(qtbot, panel, settings, tmp_path):
    _choose_floor(qtbot, panel, "0.7")
    assert panel.floor == 0.70
    settings.sync()
    again = QSettings(settings.fileName(), QSettings.Format.IniFormat)   # a later run
    assert float(again.value(FLOOR_KEY)) == 0.70
    later = SimilarFloor(again)
    qtbot.addWidget(later)
    assert later.floor == 0.70 and later.spin.value() == 0.70
    # a threshold moved under it never rewrites the choice kept
    later.set_threshold(0.6)
    assert float(again.value(FLOOR_KEY)) == 0.70
    fresh = SimilarFloor(QSettings(str(tmp_path / "none.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(fresh)
    assert fresh.floor == search_bands.DEFAULT_FLOOR
