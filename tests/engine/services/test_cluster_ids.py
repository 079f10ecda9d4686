"""Stable cluster ids on real projects: each rule of `engine.dedup.id_rules` as the analyst
meets it — a threshold move, a join, a merge, a split, a deletion, a model switch,
reopening — on a project file and (where marked) a server project."""

from __future__ import annotations

import torch

from engine.add_file import ImportChoices, add_file
from engine.dedup.id_rules import number
from engine.encoding.model_spec import load_model, resolve_model
from engine.project import Project
from tests.engine import weekly_files

FIRST = """id,question
p1,How do I learn Python quickly?
p2,What is the fastest way to learn Python?
j1,How do I learn Java quickly?
j2,What is the fastest way to learn Java?
c1,How do I learn programming quickly?
t1,Why is the sky blue?
t2,What makes the sky look blue?
w1,How can I lose weight fast?
w2,What is the quickest way to lose weight?
"""

SECOND = """id,question
p3,What's the quickest way to learn Python?
k1,Why do cats purr?
k2,What is the reason cats purr?
"""


def ids_of(clusters) -> dict[str, str]:
    """public row id -> cluster id, every row in a cluster."""
    return {m.id: c.cluster_id for c in clusters for m in (*c.members, *c.rejected)}


def make(location, encoder, tmp_path, text: str = FIRST, name: str = "first.csv") -> Project:
    project = Project.open(location, create=True)
    project.model.attach(encoder, is_default=True)
    add(project, tmp_path, text, name)
    return project


def add(project: Project, tmp_path, text: str, name: str) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    project.rows.import_table(path, ["question"], id_column="id")
    project.vectors.encode()


def test_a_threshold_moved_back_and_forth_gives_back_the_same_ids(store_location, encoder,
                                                                   tmp_path):
    with make(store_location, encoder, tmp_path) as project:
        at_08 = ids_of(project.clusters.cut(0.8))
        assert sorted(set(at_08.values())) == ["C000001", "C000002", "C000003", "C000004"]
        merged = project.clusters.cut(0.6)           # Python and Java merge around c1
        python, java = at_08["p1"], at_08["j1"]
        big = next(c for c in merged if {"p1", "j1"} <= {m.id for m in c.members})
        assert big.cluster_id == min(python, java)   # the older id stays
        gone = max(python, java)
        assert big.merged_from == (gone,)
        assert project.ids.retired() == {gone: big.cluster_id}
        assert project.info()["merged_into"] == {gone: big.cluster_id}   # duplens info --json
        assert ids_of(project.clusters.cut(0.8)) == at_08   # the merged-away id is back
        assert project.ids.retired() == {}
        for threshold in (0.95, 0.6, 0.7, 0.5, 0.8):
            project.clusters.cut(threshold)
        assert ids_of(project.clusters.cut(0.8)) == at_08
    with Project.open(store_location) as reopened:    # stored: the same on reopening
        reopened.model.attach(encoder, is_default=True)
        assert ids_of(reopened.clusters.cut(0.8)) == at_08


def test_new_rows_join_their_clusters_id_and_new_clusters_get_new_ids(store_location, encoder,
                                                                      tmp_path):
    with make(store_location, encoder, tmp_path) as project:
        before = ids_of(project.clusters.cut(0.8))
        add(project, tmp_path, SECOND, "second.csv")
        after = ids_of(project.clusters.cut(0.8))
    assert {k: after[k] for k in before} == before          # no old row moved
    assert after["p3"] == before["p1"]                      # the new row took its id
    assert after["k1"] == after["k2"]
    assert number(after["k1"]) > max(number(i) for i in before.values())


def test_a_split_keeps_the_id_with_the_canonical_and_the_other_part_gets_a_new_one(
        new_project, data_dir, tmp_path):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    at_085 = project.clusters.cut(0.85)
    add(project, tmp_path, SECOND.replace("p3", "x3"), "second.csv")     # import 2
    python = next(c for c in at_085 if "q1" in {m.id for m in c.members})
    canonical = python.canonical.id
    used = max(number(c.cluster_id) for c in at_085)
    split = [c for c in project.clusters.cut(0.95)
             if {m.id for m in c.members} & {"q1", "q2", "q3", "q41", "q42"}]
    assert len(split) == 2
    keeper = next(c for c in split if canonical in {m.id for m in c.members})
    other = next(c for c in split if c is not keeper)
    assert keeper.cluster_id == python.cluster_id
    assert number(other.cluster_id) == used + 1             # never used before
    changes = project.ids.changes_since(2)
    assert {changes[m.item_id].change for m in other.members} == {"split"}
    assert {changes[m.item_id].previous for m in other.members} == {python.cluster_id}
    # the keeper's rows stayed; the part that kept the id is listed too, once, on its
    # canonical row: as "split" (the id it kept), or as "canonical" when its lead moved
    stayed = {m.id: changes[m.item_id] for m in keeper.members if m.item_id in changes}
    if keeper.canonical.id == canonical:
        assert {k: (c.change, c.previous) for k, c in stayed.items()} == \
            {canonical: ("split", keeper.cluster_id)}
    else:
        assert [(c.change, c.previous_canonical) for c in stayed.values()] == \
            [("canonical", canonical)]
    changed = project.ids.changed_clusters(2, split)
    assert "split" in changed[keeper.cluster_id] and changed[other.cluster_id] == {"new"}


def test_the_analysts_canonical_choice_decides_which_part_keeps_the_id(new_project,
                                                                        data_dir):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    python = next(c for c in project.clusters.cut(0.85)
                  if "q1" in {m.id for m in c.members})
    other_side = next(m for m in python.members
                      if (m.id in {"q2", "q3"}) != (python.canonical.id in {"q2", "q3"}))
    project.verdicts.set_canonical([m.item_id for m in python.members], [other_side.item_id])
    again = next(c for c in project.clusters.cut(0.85) if "q1" in {m.id for m in c.members})
    assert again.cluster_id == python.cluster_id and again.canonical.id == other_side.id
    split = project.clusters.cut(0.95)
    keeper = next(c for c in split if other_side.id in {m.id for m in c.members})
    assert keeper.cluster_id == python.cluster_id


def test_deleting_the_canonical_keeps_the_id_and_deleting_a_cluster_retires_it(
        store_location, encoder, data_dir):
    with Project.open(store_location, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        project.vectors.encode()
        first = project.clusters.cut(0.85)
        python = next(c for c in first if "q1" in {m.id for m in c.members})   # 5 rows
        sky = next(c for c in first if "q10" in {m.id for m in c.members})
        project.rows.delete([python.canonical.item_id])
        project.rows.delete([m.item_id for m in sky.members])
        after = project.clusters.cut(0.85)
        still = next(c for c in after if "q1" in {m.id for m in c.members})
        assert still.cluster_id == python.cluster_id         # most of its rows are left
        assert len(still.members) == 4
        assert sky.cluster_id not in {c.cluster_id for c in after}
        assert project.ids.retired() == {sky.cluster_id: None}
        untouched = {k: v for k, v in ids_of(first).items()
                     if v not in (python.cluster_id, sky.cluster_id)}
        assert ids_of(after).items() >= untouched.items()


def test_ids_hold_when_the_project_is_encoded_again_with_another_model(new_project, tmp_path):
    project = new_project()
    add(project, tmp_path, FIRST, "first.csv")
    before = ids_of(project.clusters.cut(0.8))
    other = tmp_path / "other-model"
    model = load_model(resolve_model(None), "cpu")
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.add_(1e-3)
    model.save(str(other))
    project.model.use(str(other), device="cpu")
    assert project.vectors.encode().encoded == 9              # every text, new vectors
    after = ids_of(project.clusters.cut(0.8))
    assert after == before


def test_a_read_only_project_labels_without_recording(new_project, tmp_path, encoder):
    project = new_project()
    add(project, tmp_path, FIRST, "first.csv")
    recorded = ids_of(project.clusters.cut(0.8))
    path = project.path
    project.close()
    with Project.open(path, read_only=True) as reader:
        assert ids_of(reader.clusters.cut(0.8)) == recorded


def test_what_changed_since_an_import(new_project, tmp_path):
    project = new_project()
    add(project, tmp_path, FIRST, "first.csv")                       # import 1
    first = project.clusters.cut(0.8)
    week1, led = ids_of(first), {c.cluster_id: c.canonical.id for c in first}
    add(project, tmp_path, SECOND, "second.csv")                     # import 2
    clusters = project.clusters.cut(0.6)                             # Python and Java merge
    now = ids_of(clusters)
    public = {r["item_id"]: r["id"] for r in project.rows.page(0, 100)}
    changes = {public[i]: c for i, c in project.ids.changes_since(2).items()}
    python, java = week1["p1"], week1["j1"]
    gone, kept = max(python, java), min(python, java)
    moved = {k for k, v in week1.items() if v == gone}
    assert {k: (c.change, c.previous) for k, c in changes.items() if k in moved} == \
        dict.fromkeys(moved, ("merged", gone))
    assert changes["p3"].change == "joined" and now["p3"] == kept
    assert changes["k1"].change == changes["k2"].change == "new"
    # they stayed; a row that came with the merge or joined leads now, so the row that led
    # says so
    lead = next(c for c in clusters if c.cluster_id == kept).canonical.id
    assert week1.get(lead) != kept
    assert {k: (c.change, c.previous, c.previous_canonical) for k, c in changes.items()
            if week1.get(k) == kept} == {led[kept]: ("canonical", kept, led[kept])}
    review = project.ids.changed_clusters(2, clusters)
    assert review[kept] == {"merged", "joined", "canonical"}
    assert review[now["k1"]] == {"new"}
    assert set(review) == {kept, now["k1"]}
    assert project.ids.changes_since(1).keys() >= {i for i, p in public.items() if p in now}

    project.clusters.cut(0.8)
    left = project.clusters.cut(0.99)                                # everything dissolves
    assert not [c for c in left if c.cluster_id in week1.values()]
    assert {c.change for i, c in project.ids.changes_since(2).items()
            if public[i] in week1} == {"left"}


def test_an_import_taken_back_out_leaves_the_ids_as_they_were(store_location, encoder,
                                                              tmp_path):
    with make(store_location, encoder, tmp_path) as project:
        week1 = ids_of(project.clusters.cut(0.8))
        add(project, tmp_path, SECOND, "second.csv")
        week2 = ids_of(project.clusters.cut(0.8))
        assert project.rows.remove_import(2) == 3
        assert ids_of(project.clusters.cut(0.8)) == week1
        assert project.ids.retired() == {week2["k1"]: None}
        batches = project.rows.imports()
        assert [(b["batch"], b["live"], b["removed_at"] is not None) for b in batches] == \
            [(1, 9, False), (2, 0, True)]
        add(project, tmp_path, SECOND, "second.csv")     # the same file again: import 3
        again = ids_of(project.clusters.cut(0.8))
        assert again["p3"] == week1["p1"] and number(again["k1"]) > number(week2["k1"])


def as_compared(clusters) -> list[tuple]:
    return [(c.cluster_id, [(m.item_id, round(m.score, 6), m.verdict) for m in c.members],
             [m.item_id for m in c.rejected]) for c in clusters]


def test_after_an_import_only_what_changed_is_cut_and_it_equals_a_whole_cut(new_project,
                                                                            data_dir,
                                                                            tmp_path, encoder):
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    first = project.clusters.cut(0.8)
    python = next(c for c in first if "q1" in {m.id for m in c.members})
    project.verdicts.set_canonical([], [python.members[-1].item_id])   # a decision to keep
    project.clusters.cut(0.8)
    add(project, tmp_path, SECOND.replace("p3", "x3") + "x4,How do I learn Python quickly?\n",
        "second.csv")
    stages: list[str] = []
    after = project.clusters.cut(0.8, progress=lambda p: stages.append(p.stage))
    assert "neighbours of new texts" in stages and "neighbours" not in stages   # updated
    with Project.open(project.path) as fresh:       # a new process: the whole cut
        fresh.model.attach(encoder, is_default=True)
        whole = fresh.clusters.cut(0.8)
    assert as_compared(after) == as_compared(whole)
    assert "x4" in {m.id for c in after for m in c.members if c.cluster_id == python.cluster_id}
    # rows deleted: the same again
    gone = [m.item_id for m in python.members[:2]]
    project.rows.delete(gone)
    after = project.clusters.cut(0.8)
    with Project.open(project.path) as fresh:
        fresh.model.attach(encoder, is_default=True)
        whole = fresh.clusters.cut(0.8)
    assert as_compared(after) == as_compared(whole)


def test_a_canonical_an_import_changed_is_listed_with_the_rows_before_and_after(
        new_project, tmp_path):
    """The issue's case: an import brings a row that leads an existing cluster now (the
    weekly files' p3 is closer to both Python questions than they are to each other, so it
    takes over from p2). `changes_since` lists the cluster as "canonical" with the row that
    led it at the import, and the review's "since import" names the kind; the row that
    joined stays "joined". (tests/engine/cli/test_cli_weekly.py reads it from the command
    line: listed, --json and the changes export.)"""
    project = new_project()
    (tmp_path / "week1.csv").write_text(weekly_files.FIRST, encoding="utf-8")
    (tmp_path / "week2.csv").write_text(weekly_files.SECOND, encoding="utf-8")
    add_file(project, ImportChoices(tmp_path / "week1.csv", ["question"], "id"))
    led_by = {c.cluster_id: c.canonical.id for c in project.clusters.cut(0.8)}
    added = add_file(project, ImportChoices(tmp_path / "week2.csv", ["question"], "id"))
    clusters = project.clusters.cut(0.8)
    python = next(c for c in clusters if "p1" in {m.id for m in c.members})
    was, now = led_by[python.cluster_id], python.canonical.id
    assert (was, now) == ("p2", "p3")                     # what the import did

    public = {r["item_id"]: r["id"] for r in project.rows.page(0, 100)}
    changes = {public[i]: c for i, c in project.ids.changes_since(2).items()}
    listed = {k: c for k, c in changes.items() if c.change == "canonical"}
    assert list(listed) == [was]        # the row that leads now joined: it says so
    assert (listed[was].previous, listed[was].previous_canonical) == \
        (python.cluster_id, was)
    assert changes["p3"].change == "joined"
    assert added.changes == {"joined": 1, "new": 2, "canonical": 1}
    assert "canonical" in project.ids.changed_clusters(2, clusters)[python.cluster_id]
    assert not [c for c in project.ids.changes_since(1).values() if c.change == "canonical"]

    # The row that led then is deleted, and p1 leads what is left (p3 and p1 tie, the older
    # row wins): compared with the lead at the import still, said on p1.
    project.rows.delete([m.item_id for m in python.members if m.id == was])
    assert next(c for c in project.clusters.cut(0.8)
                if c.cluster_id == python.cluster_id).canonical.id == "p1"
    changes = {public[i]: c for i, c in project.ids.changes_since(2).items()}
    assert [(k, c.previous, c.previous_canonical) for k, c in changes.items()
            if c.change == "canonical"] == [("p1", python.cluster_id, was)]


def test_a_canonical_moved_among_old_rows_is_listed_on_the_row_that_leads_now(new_project,
                                                                               tmp_path):
    """After import 2 the analyst chooses the other row of a cluster the import left alone
    to lead it: that row is listed, with the one that led before."""
    project = new_project()
    add(project, tmp_path, FIRST, "first.csv")
    sky = next(c for c in project.clusters.cut(0.8) if "t1" in {m.id for m in c.members})
    add(project, tmp_path, SECOND, "second.csv")
    project.clusters.cut(0.8)
    other = next(m for m in sky.members if m.item_id != sky.canonical.item_id)
    assert not project.ids.changes_since(2).keys() & {m.item_id for m in sky.members}
    project.verdicts.set_canonical([m.item_id for m in sky.members], [other.item_id])
    again = next(c for c in project.clusters.cut(0.8) if "t1" in {m.id for m in c.members})
    assert again.cluster_id == sky.cluster_id and again.canonical.id == other.id
    changes = project.ids.changes_since(2)
    assert (changes[other.item_id].change, changes[other.item_id].previous,
            changes[other.item_id].previous_canonical) == \
        ("canonical", sky.cluster_id, sky.canonical.id)
    assert sky.canonical.item_id not in changes
