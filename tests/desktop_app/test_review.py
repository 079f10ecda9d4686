"""The review screen and plots: threshold sync, keyboard verdicts, undo/redo, persistence
after reopening, export with verdicts, the verdict curve, and the sample-questions start."""

from __future__ import annotations

import csv

import pytest
from PySide6.QtCore import Qt

from desktop_app.main_window import MainWindow
from desktop_app.views.review_view import MOVED_OUT, ClusterReviewView
from engine.project import Project
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS, import_sample, search_until


def open_review(qtbot, window: MainWindow, path) -> None:
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(path))
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        window.tabs.setCurrentWidget(window.review_view)


def set_threshold(qtbot, window: MainWindow, value: float) -> None:
    if abs(window.review_view.spin.value() - value) < 1e-9:
        return   # there already (the project threshold is 0.8): nothing is cut again
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        window.review_view.spin.setValue(value)


def select_cluster_of(window: MainWindow, public_id: str) -> None:
    view = window.review_view
    for pos in range(view.clusters_model.rowCount()):
        cluster = view.clusters_model.cluster(pos)
        if public_id in {m.id for m in cluster.members}:
            view.select_cluster(pos)
            return
    raise AssertionError(f"{public_id} is in no cluster")


def verdicts(window: MainWindow) -> dict[str, str]:
    table = window.review_view.members
    return {table.item(r, 0).text(): table.item(r, 2).text() for r in range(table.rowCount())}


def press(qtbot, window: MainWindow, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    """A key press on the members table, waiting for the decision to come back.

    The review keys are shortcuts of the review view, live while focus is inside it (as when
    the analyst works in the table), so the window is made active and the table focused.
    """
    window.activateWindow()
    window.review_view.members.setFocus()
    qtbot.waitUntil(window.review_view.members.hasFocus, timeout=5_000)
    with qtbot.waitSignal(window.review.historyChanged, timeout=SIGNAL_TIMEOUT_MS):
        qtbot.keyClick(window.review_view.members, key, modifier)


def test_slider_spin_and_histogram_line_stay_in_sync(qtbot, window, questions_project):
    open_review(qtbot, window, questions_project)
    view, plots = window.review_view, window.plots_view
    set_threshold(qtbot, window, 0.75)
    assert view.slider.value() == 75
    assert plots.hist_line.value() == pytest.approx(0.75)
    assert plots.curve_line.value() == pytest.approx(0.75)
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        plots.hist_line.setValue(0.9)          # what dragging the line does
    assert window.review.threshold == pytest.approx(0.9)
    assert view.slider.value() == 90 and view.spin.value() == pytest.approx(0.9)
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        view.slider.setValue(80)
    assert plots.hist_line.value() == pytest.approx(0.8)
    assert plots.curve_line.value() == pytest.approx(0.8)


def test_lower_threshold_gives_at_least_as_many_clustered_rows(qtbot, window,
                                                               questions_project):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.9)
    strict = sum(len(c.members) for c in window.review.clusters)
    set_threshold(qtbot, window, 0.7)
    loose = sum(len(c.members) for c in window.review.clusters)
    assert loose > strict > 0


def test_keyboard_review_undo_redo_and_reopen(qtbot, window, questions_project, bridge):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    select_cluster_of(window, "q2")
    view = window.review_view
    canonical = view.cluster.canonical.id
    first = view.selected_members()[0].id          # the first member awaiting a verdict
    assert first != canonical and view.current_pair()[0].id == canonical
    press(qtbot, window, Qt.Key.Key_D)
    assert verdicts(window)[first] == "duplicate"
    second = view.selected_members()[0].id         # selection moved on to the next one
    assert second not in (first, canonical)
    press(qtbot, window, Qt.Key.Key_M)
    assert verdicts(window)[second] == MOVED_OUT
    assert second not in {m.id for m in view.cluster.members}
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert verdicts(window)[second] == ""
    press(qtbot, window, Qt.Key.Key_Z,
          Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert verdicts(window)[second] == MOVED_OUT
    assert window.review_view.undo_button.isEnabled()

    window.close()                                 # closes the project, like quitting
    with Project.open(questions_project, read_only=True) as project:
        labels = {(p["label"], frozenset((p["text_a"], p["text_b"])))
                  for p in project.verdicts.pairs()}
        texts = {r["id"]: r["text"] for r in project.rows.page(0, 100)}
    assert labels == {(1, frozenset((texts[canonical], texts[first]))),
                      (0, frozenset((texts[canonical], texts[second])))}


def test_a_cluster_decided_to_the_end_counts_as_reviewed_at_once(qtbot, window,
                                                                 questions_project):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    view = window.review_view
    pairs = [pos for pos in range(view.clusters_model.rowCount())
             if len(view.clusters_model.cluster(pos).members) == 2]
    assert pairs, "the test data has two-row clusters at 0.75"
    view.select_cluster(pairs[0])
    assert view.summary.text().endswith(" 0 reviewed")
    press(qtbot, window, Qt.Key.Key_D)             # its one member: the cluster is done
    assert view.clusters_model.cluster(pairs[0]).reviewed
    assert view.summary.text().endswith(" 1 reviewed")
    assert view.clusters_model.index(pairs[0]).data().startswith("✓ ")
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert view.summary.text().endswith(" 0 reviewed")


def test_set_canonical_and_export_with_verdicts(qtbot, window, questions_project, tmp_path):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    select_cluster_of(window, "q2")
    view = window.review_view
    last = view.cluster.members[-1]
    view.select_member_row(len(view.cluster.members) - 1)
    press(qtbot, window, Qt.Key.Key_C)
    assert view.cluster.canonical.id == last.id
    assert verdicts(window)[last.id] == "canonical"
    press(qtbot, window, Qt.Key.Key_D)             # first pending member vs the new canonical
    out = tmp_path / "reviewed.csv"
    with qtbot.waitSignal(window.review.exported, timeout=SIGNAL_TIMEOUT_MS) as blocker:
        window.review.export(str(out))
    assert blocker.args[1] > 0
    with out.open(encoding="utf-8-sig") as fh:
        rows = {r["qid"]: r for r in csv.DictReader(fh)}
    assert rows[last.id]["decision"] == "canonical"
    assert list(r["decision"] for r in rows.values()).count("duplicate") == 1


def test_verdict_curve_offers_its_best_threshold(qtbot, window, questions_project):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.6)
    view = window.review_view
    select_cluster_of(window, "q2")
    press(qtbot, window, Qt.Key.Key_D)
    weakest = view.cluster.members[-1]
    view.select_member_row(len(view.cluster.members) - 1)
    window.activateWindow()
    view.members.setFocus()
    qtbot.waitUntil(view.members.hasFocus, timeout=5_000)
    with qtbot.waitSignal(window.review.curveReady, timeout=SIGNAL_TIMEOUT_MS,
                          check_params_cb=lambda c: c.negatives > 0) as blocker:
        qtbot.keyClick(view.members, Qt.Key.Key_N)
    curve = blocker.args[0]
    assert curve.usable and curve.positives == 1 and curve.negatives == 1
    assert weakest.id not in {m.id for m in view.cluster.members}
    plots = window.plots_view
    assert plots.apply_best.isEnabled()
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        plots.apply_best.click()
    assert window.review.threshold == pytest.approx(round(curve.best_threshold, 3))
    assert view.spin.value() == pytest.approx(round(curve.best_threshold, 2))


def test_plots_tab_draws_histogram_and_map(qtbot, window, questions_project):
    with qtbot.waitSignal(window.bridge.projectOpened, timeout=SIGNAL_TIMEOUT_MS):
        window.open_project(str(questions_project))
    with qtbot.waitSignals([window.review.histogramReady, window.review.mapReady],
                           timeout=SIGNAL_TIMEOUT_MS):
        window.tabs.setCurrentWidget(window.plots_view)
    xs, counts = window.plots_view.hist_curve.getData()
    assert counts.sum() == window._info["texts"]
    assert len(window.plots_view.map_points.data) == window._info["texts"]


def test_sample_questions_import_and_find_a_known_duplicate(qtbot, window, tmp_path,
                                                            monkeypatch):
    import_sample(qtbot, window, tmp_path / "sample.duplens", monkeypatch)
    search_until(qtbot, window.search_panel,
                 "what can I use instead of eggs when baking a cake", "egg", timeout=10_000)


def test_undo_leaves_a_verdict_someone_else_gave_since_and_shows_it(qtbot, window,
                                                                     questions_project):
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    select_cluster_of(window, "q2")
    view = window.review_view
    canonical = view.cluster.canonical
    first = view.selected_members()[0]
    press(qtbot, window, Qt.Key.Key_D)
    assert verdicts(window)[first.id] == "duplicate"
    with Project.open(questions_project) as other:   # another analyst: "not duplicate"
        other.verdicts.set_verdict(canonical.item_id, first.item_id, 0)
    window.activateWindow()
    view.members.setFocus()
    qtbot.waitUntil(view.members.hasFocus, timeout=5_000)
    with qtbot.waitSignal(window.review.historyChanged, timeout=SIGNAL_TIMEOUT_MS) as said:
        qtbot.keyClick(view.members, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    can_undo, _can_redo, what = said.args
    assert "someone else" in what and not can_undo
    assert verdicts(window)[first.id] == MOVED_OUT          # theirs, shown
    with Project.open(questions_project, read_only=True) as project:
        assert project.verdicts.verdict(canonical.item_id, first.item_id) == 0


@pytest.mark.parametrize("typed", ["0.75", "0.83", "0.5", "0.63", "0.99", "0.8"])
def test_the_threshold_box_takes_a_typed_value_with_two_decimals(qtbot, bridge, typed):
    """Select all, type: the box keeps what is typed (no "0.70" written back under the
    cursor after "0.7", no refused digit after "0.8") and takes it on Enter, once."""
    from desktop_app.controllers.review_controller import ReviewController
    from desktop_app.views.review_view import ClusterReviewView

    controller = ReviewController(bridge)
    view = ClusterReviewView(controller)
    qtbot.addWidget(view)
    view.show()
    controller.set_threshold(0.9)                       # not a value typed below
    chosen: list[float] = []
    controller.thresholdChanged.connect(chosen.append)
    view.spin.setFocus()
    view.spin.lineEdit().selectAll()
    qtbot.keyClicks(view.spin, typed)
    assert view.spin.lineEdit().text() == typed       # as typed, while typing
    assert chosen == []                                # nothing taken before Enter
    qtbot.keyClick(view.spin, Qt.Key.Key_Return)
    assert chosen == [pytest.approx(float(typed))]
    assert controller.threshold == pytest.approx(float(typed))
    assert view.spin.value() == pytest.approx(float(typed))
    assert view.slider.value() == round(float(typed) * 100)


def _two_row_clusters(view) -> list[int]:
    return [pos for pos in range(view.clusters_model.rowCount() - 1)
            if len(view.clusters_model.cluster(pos).members) == 2]


def test_the_next_cluster_follows_the_last_verdict_unless_turned_off(qtbot, window,
                                                                     questions_project,
                                                                     settings):
    """Before, a finished cluster stayed on screen ("Select a member to compare…") until
    J. Undo brings the cluster back; the checkbox turns it off, and is remembered."""
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    view = window.review_view
    pairs = _two_row_clusters(view)
    assert len(pairs) >= 2, "the test data has two-row clusters at 0.75"
    view.select_cluster(pairs[0])
    done = view.cluster.cluster_id
    press(qtbot, window, Qt.Key.Key_D)             # its one member: done, the next follows
    assert view.cluster_list.currentIndex().row() == pairs[0] + 1
    assert view.cluster.cluster_id != done and view.current_pair() is not None
    press(qtbot, window, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert view.cluster.cluster_id == done         # undo: back where the verdict was given

    view.next_when_done.setChecked(False)          # off: the cluster stays, and says why
    assert str(settings.value("review/next_cluster_when_done")).lower() == "false"
    press(qtbot, window, Qt.Key.Key_N)
    assert view.cluster.cluster_id == done
    assert view.pair_label.text() == "Every member has a verdict: J for the next cluster."
    again = ClusterReviewView(window.review, None, settings)   # the setting is remembered
    qtbot.addWidget(again)
    assert not again.next_when_done.isChecked()


def test_the_loss_plot_has_room_for_its_top_label(qtbot):
    """A loss starting near 0.95 puts the 1.0 tick at the plot's top edge, where its
    label was cut in half."""
    from PySide6.QtGui import QFontMetrics

    from desktop_app.views.training_plots import LossPlot

    plot = LossPlot()
    qtbot.addWidget(plot)
    plot.resize(500, 220)
    plot.set_points(list(range(1, 60)), [0.9524 * 0.97 ** s for s in range(59)])
    plot.show()
    qtbot.waitExposed(plot)
    top = plot.getPlotItem().getViewBox().sceneBoundingRect().top()
    assert plot.getPlotItem().getViewBox().viewRange()[1][1] == pytest.approx(1.0, abs=1e-3)
    assert top >= QFontMetrics(plot.getAxis("left").font()).height() / 2


def test_a_cluster_parted_by_a_not_duplicate_verdict_is_no_longer_listed(qtbot, window,
                                                                        questions_project):
    """The review's list shows the clusters an export writes: once a verdict parts the two
    rows of a pair, the next cut lists it no more (and no cluster without an id)."""
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    shown = window.review.clusters
    pair = next(c for c in shown if len(c.members) == 2)
    a, b = (m.item_id for m in pair.members)
    window.bridge.current_project().verdicts.set_verdict(a, b, 0)
    with qtbot.waitSignal(window.review.clustersChanged, timeout=SIGNAL_TIMEOUT_MS):
        window.review.refresh()
    after = window.review.clusters
    assert pair.cluster_id not in {c.cluster_id for c in after}
    assert all(len(c.members) > 1 and c.cluster_id for c in after)
    assert len(after) == len(shown) - 1


def test_after_each_verdict_the_next_member_waiting_for_one_is_selected(qtbot, window,
                                                                       questions_project):
    """N moves the member out of the cluster; before, the selection then fell back to the
    canonical row and the next key only said "Select a member (or two) to mark first."
    Now every verdict key leaves the next member without a verdict selected (from the top
    again when the one judged was the last), so the keys can follow one another."""
    open_review(qtbot, window, questions_project)
    set_threshold(qtbot, window, 0.75)
    select_cluster_of(window, "q2")
    view = window.review_view
    waiting = [m.id for m in view.cluster.members[1:]]
    assert len(waiting) >= 4, "the test data has a cluster of five rows around q2 at 0.75"

    def selected() -> str:
        [member] = view.selected_members()
        return member.id

    assert selected() == waiting[0]
    press(qtbot, window, Qt.Key.Key_N)
    assert verdicts(window)[waiting[0]] == MOVED_OUT
    assert selected() == waiting[1] and view.current_pair() is not None
    press(qtbot, window, Qt.Key.Key_D)              # the next key works at once
    assert verdicts(window)[waiting[1]] == "duplicate"
    assert selected() == waiting[2]
    view.select_member_row(view.pane.row_of(view.cluster.members[-1].item_id))
    last = selected()
    press(qtbot, window, Qt.Key.Key_N)              # the last one: back to the first waiting
    assert verdicts(window)[last] == MOVED_OUT
    assert selected() == waiting[2] and view.current_pair() is not None
    assert "Select a member" not in view.pair_label.text()


def test_the_comparison_asks_for_a_member_only_where_there_is_one(qtbot):
    """Its placeholder showed with no cluster at all (and in Ask me and Measure quality,
    whose panel is the same widget); now only a cluster with a member to select shows it."""
    from desktop_app.views.cluster_pane import ClusterPane
    from engine.dedup.row_clusters import Cluster, Member

    pane = ClusterPane(lambda: 0.8)
    qtbot.addWidget(pane)
    assert pane.compare.left_title.text() == ""
    pane.show_cluster(None)
    assert pane.compare.left_title.text() == ""
    assert pane.pair_label.text() == "No clusters at this threshold."
    rows = [Member(1, "a1", 1, 1, "How do I learn Python?", 1.0, 1),
            Member(2, "a2", 2, 1, "How can I learn Python?", 0.93, 2)]
    pane.show_cluster(Cluster("C000001", rows))
    assert pane.selected_members()[0].id == "a2" and pane.compare.left_title.text() != ""
    pane.select_member_row(0)                 # the canonical alone: no pair
    assert pane.compare.left_title.text() == ("Select a member to compare it with the "
                                              "canonical row")
