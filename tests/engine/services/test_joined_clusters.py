"""Every cut obeys every verdict on a real project: two rows judged "duplicate" that the cut
put in different clusters, or in none, share one (`engine.review.verdict_joins`), with the
stable ids' rules (a merge keeps the older id, the other is retired into it and listed as
"merged"; a row joined from no cluster is "joined"); a "not duplicate" verdict forbids a
join; an import's incremental cut equals a whole one."""

from __future__ import annotations

from engine.project import Project
from tests.engine.services.test_cluster_ids import SECOND, add, as_compared, make

CATS = "\n".join(line for line in SECOND.splitlines() if not line.startswith("p3")) + "\n"


def _by_id(project: Project, threshold: float = 0.8) -> dict[str, str]:
    """public row id -> cluster id, for rows in a cluster (not those moved out)."""
    return {m.id: c.cluster_id for c in project.clusters.cut(threshold) for m in c.members}


def _item(project: Project, public: str) -> int:
    return project.rows.by_public_id(public)["item_id"]


def _changes(project: Project, batch: int) -> dict:
    """public row id -> its change since import `batch`."""
    changes = project.ids.changes_since(batch)
    return {r["id"]: changes[r["item_id"]] for r in project.rows.by_ids(list(changes))}


def test_a_duplicate_verdict_across_two_clusters_joins_them_under_the_older_id(
        store_location, encoder, tmp_path):
    project = make(store_location, encoder, tmp_path)
    before = _by_id(project)
    java, python = before["j1"], before["p1"]
    assert java != python and "c1" not in before          # as cut: apart, c1 in none
    add(project, tmp_path, CATS, "second.csv")     # import 2
    project.clusters.cut(0.8)
    project.verdicts.set_verdict(_item(project, "p1"), _item(project, "j1"), 1)
    project.verdicts.set_verdict(_item(project, "c1"), _item(project, "j2"), 1)
    clusters = project.clusters.cut(0.8)
    joined = next(c for c in clusters if "p1" in {m.id for m in c.members})
    assert {m.id for m in joined.members} == {"p1", "p2", "j1", "j2", "c1"}
    kept, retired = sorted([java, python])
    assert joined.cluster_id == kept and joined.merged_from == (retired,)
    assert [m.score for m in joined.members[1:]] == \
        sorted((m.score for m in joined.members[1:]), reverse=True)
    assert all(0.0 < m.score < 1.0 for m in joined.members[1:])
    by_public = _changes(project, 2)
    moved = "p1" if retired == python else "j1"
    assert (by_public[moved].change, by_public[moved].previous) == ("merged", retired)
    assert (by_public["c1"].change, by_public["c1"].previous) == ("joined", "")
    # after import 3, the dup verdict taken back: the clusters part again, the part
    # without the anchor takes its old id back, listed as split from the merged cluster
    add(project, tmp_path, "id,question\nz1,How do volcanoes erupt?\n", "third.csv")
    project.clusters.cut(0.8)
    project.verdicts.set_verdict(_item(project, "p1"), _item(project, "j1"), None)
    apart = _by_id(project)
    assert {apart["p1"], apart["j1"]} == {kept, retired} and apart["c1"] == apart["j1"]
    again = _changes(project, 3)
    back = "p1" if apart["p1"] == retired else "j1"
    assert (again[back].change, again[back].previous) == ("split", kept)


def test_not_wins_when_it_forbids_what_duplicate_verdicts_join(store_location, encoder,
                                                               tmp_path):
    project = make(store_location, encoder, tmp_path)
    project.clusters.cut(0.8)
    project.verdicts.set_verdict(_item(project, "p1"), _item(project, "j1"), 1)
    project.verdicts.set_verdict(_item(project, "c1"), _item(project, "p2"), 1)
    project.verdicts.set_verdict(_item(project, "c1"), _item(project, "j2"), 0)
    where = _by_id(project)
    assert where.get("c1") != where.get("j2")
    # one of the two joins is made, the other forbidden by the "not"
    assert (where["p1"] == where["j1"]) != (where.get("c1") == where["p2"])


def test_after_an_import_a_cut_with_joins_equals_a_whole_cut(open_questions, tmp_path,
                                                             encoder):
    project = open_questions
    first = project.clusters.cut(0.8)
    one, two, three = first[0], first[1], first[2]
    clustered = {m.item_id for c in first for m in c.members}
    alone = next(r for r in project.rows.page(0, 1000) if r["item_id"] not in clustered)
    project.verdicts.set_verdict(one.members[-1].item_id, two.members[-1].item_id, 1)
    project.verdicts.set_verdict(alone["item_id"], three.members[-1].item_id, 1)
    project.clusters.cut(0.8)
    add(project, tmp_path, SECOND.replace("p3", "x3") + f"x4,{one.canonical.text}\n",
        "second.csv")
    stages: list[str] = []
    after = project.clusters.cut(0.8, progress=lambda p: stages.append(p.stage))
    assert "neighbours of new texts" in stages and "neighbours" not in stages   # updated
    with Project.open(project.path) as fresh:       # a new process: the whole cut
        fresh.model.attach(encoder, is_default=True)
        whole = fresh.clusters.cut(0.8)
    assert as_compared(after) == as_compared(whole)
    where = {m.item_id: c.cluster_id for c in after for m in c.members}
    assert where[one.members[-1].item_id] == where[two.members[-1].item_id] == \
        where[_item(project, "x4")]
    assert where[alone["item_id"]] == where[three.members[-1].item_id]
    project.rows.delete([three.canonical.item_id])  # the cluster the lone row joined shrinks
    after = project.clusters.cut(0.8)
    with Project.open(project.path) as fresh:
        fresh.model.attach(encoder, is_default=True)
        whole = fresh.clusters.cut(0.8)
    assert as_compared(after) == as_compared(whole)
    where = {m.item_id: c.cluster_id for c in after for m in c.members}
    assert where[alone["item_id"]] == where[three.members[-1].item_id]
