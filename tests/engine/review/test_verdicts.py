"""The review on a real project: verdicts, canonical choice, move out, undo/redo,
persistence across reopening, and export with the verdicts."""

import csv

import pytest

from engine.dedup.row_clusters import CANONICAL, DUPLICATE, NOT_DUPLICATE
from engine.project import Project
from engine.review.history import ReviewHistory

THRESHOLD = 0.75


@pytest.fixture
def project(open_questions):
    """The shared questions project, under the name every decision test reads best with."""
    return open_questions


def cluster_with(clusters, public_id):
    return next(c for c in clusters if public_id in {m.id for m in c.members})


def member(cluster, public_id):
    return next(m for m in (*cluster.members, *cluster.rejected) if m.id == public_id)


def test_python_cluster_is_cut_with_three_members(project):
    python = cluster_with(project.clusters.cut(THRESHOLD), "q2")
    assert {"q1", "q2", "q3"} <= {m.id for m in python.members}


def test_mark_duplicate_and_move_out_show_as_verdicts(project):
    history = ReviewHistory(project.verdicts)
    python = cluster_with(project.clusters.cut(THRESHOLD), "q2")
    canonical = python.canonical
    others = [m for m in python.members[1:] if m.id in {"q1", "q2", "q3"}]
    history.judge(canonical.item_id, others[0].item_id, 1)
    history.move_out(python, others[1].item_id)

    again = cluster_with(project.clusters.cut(THRESHOLD), canonical.id)
    assert member(again, others[0].id).verdict == DUPLICATE
    assert others[1].id in {m.id for m in again.rejected}
    assert others[1].id not in {m.id for m in again.members}
    assert member(again, others[1].id).verdict == NOT_DUPLICATE


def test_undo_and_redo_walk_the_verdicts_back_and_forth(project):
    history = ReviewHistory(project.verdicts)
    python = cluster_with(project.clusters.cut(THRESHOLD), "q2")
    out = python.members[1]
    history.move_out(python, out.item_id)
    assert out.id in {m.id for m in cluster_with(project.clusters.cut(THRESHOLD),
                                                   python.canonical.id).rejected}
    assert history.undo() is not None
    back = cluster_with(project.clusters.cut(THRESHOLD), python.canonical.id)
    assert out.id in {m.id for m in back.members} and not back.rejected
    assert project.verdicts.verdict(python.canonical.item_id, out.item_id) is None
    assert history.can_redo
    history.redo()
    assert project.verdicts.verdict(out.item_id, python.canonical.item_id) == 0
    assert not history.can_redo and history.undo() and history.undo() is None


def test_set_canonical_reorders_and_rescores_against_it(project, encoder):
    history = ReviewHistory(project.verdicts)
    python = cluster_with(project.clusters.cut(THRESHOLD), "q2")
    new_head = python.members[-1]
    history.set_canonical(python, new_head.item_id)
    again = cluster_with(project.clusters.cut(THRESHOLD), new_head.id)
    assert again.canonical.id == new_head.id
    assert again.canonical.verdict == CANONICAL
    vectors = encoder.encode([m.text for m in again.members])
    for m, v in zip(again.members[1:], vectors[1:], strict=True):
        assert m.score == pytest.approx(float(v @ vectors[0]), abs=1e-4)
    history.undo()
    assert cluster_with(project.clusters.cut(THRESHOLD), "q2").canonical.id == \
        python.canonical.id


def test_verdicts_survive_closing_and_reopening(project, encoder):
    history = ReviewHistory(project.verdicts)
    python = cluster_with(project.clusters.cut(THRESHOLD), "q2")
    head, dup = python.members[-1], python.members[1]
    history.set_canonical(python, head.item_id)
    history.judge(head.item_id, dup.item_id, 1)
    path = project.path
    project.close()

    reopened = Project.open(path)
    try:
        reopened.model.attach(encoder, is_default=True)
        again = cluster_with(reopened.clusters.cut(THRESHOLD), head.id)
        assert again.canonical.id == head.id
        assert member(again, dup.id).verdict == DUPLICATE
        pairs = reopened.verdicts.pairs()
        assert [(p["label"], {p["text_a"], p["text_b"]}) for p in pairs] == \
            [(1, {head.text, dup.text})]
        assert reopened.verdicts.counts() == {"duplicate": 1, "not_duplicate": 0}
    finally:
        reopened.close()


def test_export_carries_each_rows_verdict_and_a_row_moved_out_is_in_no_cluster(
        project, tmp_path):
    history = ReviewHistory(project.verdicts)
    python = cluster_with(project.clusters.cut(THRESHOLD), "q2")
    kept, out = python.members[1], python.members[2]
    history.set_canonical(python, python.canonical.item_id)
    history.judge(python.canonical.item_id, kept.item_id, 1)
    history.move_out(python, out.item_id)
    path = tmp_path / "clusters.csv"
    project.exports.clusters(path, project.clusters.cut(THRESHOLD), THRESHOLD)
    with path.open(encoding="utf-8-sig") as fh:
        rows = {r["qid"]: r for r in csv.DictReader(fh)}
    assert rows[python.canonical.id]["decision"] == "canonical"
    assert rows[kept.id]["decision"] == "duplicate"
    # Moved out: in no cluster, so not among the clusters' rows at all.
    assert out.id not in rows
    untouched = [r for r in rows.values() if r["cluster_id"] != rows[kept.id]["cluster_id"]]
    assert untouched and {r["decision"] for r in untouched} <= {"unreviewed"}
    assert rows[kept.id]["duplicate_of"] == python.canonical.id
    every = tmp_path / "every.csv"
    project.exports.rows(every, project.clusters.cut(THRESHOLD), THRESHOLD)
    with every.open(encoding="utf-8-sig") as fh:
        moved = next(r for r in csv.DictReader(fh) if r["qid"] == out.id)
    assert moved["cluster_id"] == moved["canonical_id"] == moved["duplicate_of"] == ""


def test_deduplicated_export_keeps_rows_moved_out(project, tmp_path):
    history = ReviewHistory(project.verdicts)
    python = cluster_with(project.clusters.cut(THRESHOLD), "q2")
    out = python.members[-1]
    history.move_out(python, out.item_id)
    path = tmp_path / "dedup.csv"
    clusters = project.clusters.cut(THRESHOLD)
    written = project.exports.rows(path, clusters, THRESHOLD, form="deduplicated")
    with path.open(encoding="utf-8-sig") as fh:
        kept = {r["qid"] for r in csv.DictReader(fh)}
    duplicates = sum(len(c.members) - 1 for c in clusters)
    assert written == len(kept) == project.rows.count() - duplicates
    assert out.id in kept and python.canonical.id in kept
    assert not kept & {m.id for m in cluster_with(clusters, "q2").members[1:]}


def test_verdict_curve_finds_the_threshold_that_separates_the_verdicts(project):
    clusters = project.clusters.cut(0.6, verdicts=False)
    close = [(c.canonical, m) for c in clusters for m in c.members[1:] if m.score > 0.8]
    far = [(c.canonical, m) for c in clusters for m in c.members[1:] if m.score < 0.75]
    assert close and far
    for a, b in close:
        project.verdicts.set_verdict(a.item_id, b.item_id, 1)
    for a, b in far:
        project.verdicts.set_verdict(a.item_id, b.item_id, 0)
    curve = project.verdicts.curve()
    assert curve.usable and curve.positives == len(close) and curve.negatives == len(far)
    assert curve.best_f1 == pytest.approx(1.0)
    assert max(b.score for _, b in far) < curve.best_threshold <= min(b.score for _, b in close)


def test_histogram_counts_every_text_with_a_neighbour(project):
    hist = project.clusters.histogram(bins=20)
    assert hist.total == project.info()["texts"]
    assert hist.counts.sum() == hist.total and len(hist.edges) == 21
    assert hist.edges[-1] == pytest.approx(1.0)


def test_embedding_map_places_every_text_and_colours_clusters(project):
    emap = project.clusters.map(THRESHOLD)
    assert emap.xy.shape == (project.info()["texts"], 2)
    as_cut = project.clusters.cut(THRESHOLD, verdicts=False)
    python_texts = {m.text_id for m in cluster_with(as_cut, "q2").members}
    colours = {int(c) for t, c in zip(emap.text_ids, emap.cluster, strict=True)
               if int(t) in python_texts}
    assert len(colours) == 1 and colours != {0}


def test_clusters_without_verdicts_pass_through_as_the_full_rule_would_make_them(project):
    from engine.review.verdict_overlay import apply_verdicts

    clusters = project.clusters.cut(THRESHOLD, verdicts=False)
    python = cluster_with(clusters, "q2")
    first, second = python.members[1], python.members[2]
    project.verdicts.set_verdict(python.canonical.item_id, first.item_id, 0)
    project.verdicts.set_canonical([], [second.item_id])

    shown = project.clusters.cut(THRESHOLD)
    labels = {(min(python.canonical.item_id, first.item_id),
               max(python.canonical.item_id, first.item_id)): 0}
    every = [apply_verdicts(c, labels, {second.item_id}, project.clusters._similarities)
             for c in clusters]                      # the full rule on every cluster
    assert shown == every
    led = cluster_with(shown, second.id)
    assert led.canonical.item_id == second.item_id
    # "not duplicate" between the old centre and `first` is obeyed though neither leads now:
    # the centre stays (closer to the new canonical), `first` is moved out.
    assert first.item_id in {m.item_id for m in led.rejected}
    assert python.canonical.item_id in {m.item_id for m in led.members}


def test_rows_read_for_a_cut_follow_imports_and_deletions(project, tmp_path):
    before = project.clusters.cut(THRESHOLD)
    python = cluster_with(before, "q2")
    gone = python.members[-1]
    project.rows.delete([gone.item_id])
    assert gone.id not in {m.id for c in project.clusters.cut(THRESHOLD) for m in c.members}

    extra = tmp_path / "extra.csv"
    extra.write_text("qid,question\nx1," + python.canonical.text + "\n")
    project.rows.import_table(extra, ["question"], id_column="qid")   # an exact copy: no encoding
    again = cluster_with(project.clusters.cut(THRESHOLD), python.canonical.id)
    assert "x1" in {m.id for m in again.members}


def test_not_duplicate_verdicts_reach_every_cluster_and_every_export(project, tmp_path):
    """What an analyst saw go wrong: `label A B not` on two rows of one cluster left them
    sharing its cluster_id in the export, and a cluster whose only other row was moved out
    was still exported as a cluster. Every "not duplicate" now parts the rows in the cut,
    the ids, the counts and every export form."""
    clusters = project.clusters.cut(THRESHOLD)
    pair = next(c for c in clusters if len(c.members) == 2)
    big = next(c for c in clusters if len(c.members) >= 3)
    a, b = big.members[1], big.members[2]          # neither leads its cluster
    project.verdicts.set_verdict(a.item_id, b.item_id, 0)
    project.verdicts.set_verdict(pair.members[0].item_id, pair.members[1].item_id, 0)

    after = project.clusters.cut(THRESHOLD)
    where = {m.item_id: c.cluster_id for c in after for m in c.members}
    assert where.get(a.item_id) != where.get(b.item_id) or a.item_id not in where
    assert not {m.item_id for m in pair.members} & set(where)   # a pair parted is no cluster
    assert all(len(c.members) > 1 and c.cluster_id for c in after)
    assert sum(len(c.members) for c in after) == len(where)      # each row in one cluster

    for form, name in (("all", "all.csv"), ("only-clusters", "clusters.csv"),
                       ("deduplicated", "dedup.csv")):
        path = tmp_path / name
        project.exports.rows(path, after, THRESHOLD, form=form)
        with path.open(encoding="utf-8-sig") as fh:
            exported = {r["qid"]: r for r in csv.DictReader(fh)}
        ids = {k: r["cluster_id"] for k, r in exported.items()}
        if a.id in ids and b.id in ids:
            assert ids[a.id] != ids[b.id] or ids[a.id] == "", form
        for m in pair.members:
            assert ids.get(m.id, "") == "", form
        shown = {k for k, v in ids.items() if v}
        assert shown <= {m.id for c in after for m in c.members}, form
