"""`ClusterIds.changes_since`'s "canonical" on hand-made cuts (no model): which row a
cluster's new lead is listed on, with the row that led it at the import, in each case the
rule names; the real-model case (an import's row takes the lead) is in
test_cluster_ids.py."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from engine.dedup.row_clusters import Cluster, Member
from engine.project import Project


def import_rows(project: Project, folder: Path, name: str, ids: str) -> dict[str, int]:
    """Import one row per letter of `ids`; public id -> item id of every row so far."""
    path = folder / name
    path.write_text("id,q\n" + "".join(f"{i},question {i}\n" for i in ids), encoding="utf-8")
    project.rows.import_table(path, ["q"], id_column="id")
    return {r["id"]: r["item_id"] for r in project.rows.page(0, 1000)}


def cut(project: Project, items: dict[str, int], *clusters: str) -> list[Cluster]:
    """Label and record a cut of `clusters` (each a string of row ids, the lead first)."""
    return project.ids.label([
        Cluster("", [Member(items[i], i, 0, 1, i, 1.0, items[i]) for i in rows])
        for rows in clusters])


def ids(clusters: list[Cluster]) -> dict[str, str]:
    """The lead's public id -> its cluster's id."""
    return {c.canonical.id: c.cluster_id for c in clusters}


def listed(project: Project, items: dict[str, int], since: int) -> dict[str, tuple]:
    """Public id -> (change, previous cluster id, previous canonical) since import `since`."""
    public = {v: k for k, v in items.items()}
    return {public[i]: (c.change, c.previous, c.previous_canonical)
            for i, c in project.ids.changes_since(since).items()}


def test_a_lead_moved_to_a_row_that_stayed_is_listed_on_it(tmp_path):
    with Project.open(tmp_path / "p.duplens", create=True) as project:
        items = import_rows(project, tmp_path, "1.csv", "abc")
        k = ids(cut(project, items, "abc"))["a"]
        items = import_rows(project, tmp_path, "2.csv", "x")
        now = cut(project, items, "bac")
        assert listed(project, items, 2) == {"b": ("canonical", k, "a")}
        assert project.ids.changed_clusters(2, now) == {k: {"canonical"}}


def test_a_lead_that_joined_leaves_it_to_the_row_that_led(tmp_path):
    with Project.open(tmp_path / "p.duplens", create=True) as project:
        items = import_rows(project, tmp_path, "1.csv", "abc")
        k = ids(cut(project, items, "abc"))["a"]
        items = import_rows(project, tmp_path, "2.csv", "d")
        cut(project, items, "dabc")
        assert listed(project, items, 2) == {"a": ("canonical", k, "a"),
                                             "d": ("joined", "", "")}


def test_a_lead_that_joined_where_the_row_that_led_is_gone_says_it_itself(tmp_path):
    with Project.open(tmp_path / "p.duplens", create=True) as project:
        items = import_rows(project, tmp_path, "1.csv", "abc")
        cut(project, items, "abc")
        items = import_rows(project, tmp_path, "2.csv", "d")
        project.rows.delete([items["a"]])
        cut(project, items, "dbc")
        assert listed(project, items, 2) == {"d": ("canonical", "", "a")}


def test_a_lead_that_came_with_a_merge_is_said_on_the_row_that_led(tmp_path):
    with Project.open(tmp_path / "p.duplens", create=True) as project:
        items = import_rows(project, tmp_path, "1.csv", "abcef")
        before = ids(cut(project, items, "abc", "ef"))
        items = import_rows(project, tmp_path, "2.csv", "x")
        merged = ids(cut(project, items, "eabcf"))["e"]
        assert merged == before["a"]                               # the older id stays
        assert listed(project, items, 2) == {"a": ("canonical", merged, "a"),
                                             "e": ("merged", before["e"], ""),
                                             "f": ("merged", before["e"], "")}


def test_a_lead_moved_and_back_a_new_cluster_and_an_unrecorded_lead_are_not_listed(
        tmp_path):
    with Project.open(tmp_path / "p.duplens", create=True) as project:
        items = import_rows(project, tmp_path, "1.csv", "abcef")
        cut(project, items, "abc", "ef")
        with project.store.write() as conn:            # as recorded before schema 7
            conn.execute(text("UPDATE cluster_ids SET canonical_item = NULL "
                              "WHERE anchor_item = :e"), {"e": items["e"]})
        project.ids.forget()
        items = import_rows(project, tmp_path, "2.csv", "xy")
        cut(project, items, "bac", "fe", "xy")
        cut(project, items, "abc", "fe", "xy")
        assert listed(project, items, 2) == {"x": ("new", "", ""), "y": ("new", "", "")}
        assert listed(project, items, 1) == {i: ("new", "", "") for i in "abcefxy"}
