"""A project of questions holding a few documents: after an import, only what changed is cut
again (the documents' rule replayed too), and the clusters are those of a whole cut."""

from __future__ import annotations

import csv

import engine.services.clusters as clusters_service
from engine.project import Project
from tests.engine.encoding.test_windows import LONG
from tests.engine.services.test_cluster_ids import as_compared

INTRO = " ".join(f"Weather note {i}: light rain is expected over the northern hills, with"
                 f" winds from the west and cooler nights." for i in range(25))
OTHER = " ".join(f"Chapter {i}: the orchestra rehearsed movement {i % 4 + 1} twice, and the "
                 f"conductor asked the violins for a softer entry." for i in range(90))


def _rows(path, rows: list[tuple[str, str]]):
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "question"])
        writer.writerows(rows)
    return path


def test_after_an_import_a_mixed_project_is_re_cut_and_equals_a_whole_cut(
        new_project, data_dir, tmp_path, encoder, monkeypatch):
    replayed = []
    real = clusters_service.recut_clusters
    monkeypatch.setattr(clusters_service, "recut_clusters",
                        lambda *a, **k: replayed.append(1) or real(*a, **k))
    project = new_project()
    project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.rows.import_table(_rows(tmp_path / "docs.csv", [
        ("d1", LONG), ("d2", OTHER), ("d3", INTRO + " " + OTHER)]), ["question"],
        id_column="id")
    project.vectors.encode()
    first = project.clusters.cut(0.8)
    assert not replayed
    assert any({m.id for m in c.members} == {"d2", "d3"} for c in first)

    # Next week: a question and a near copy of a document, a copy of the other under an
    # introduction.
    project.rows.import_table(_rows(tmp_path / "week2.csv", [
        ("x1", "How can I learn Python fast?"),
        ("d4", LONG.replace("committee", "board", 3)),
        ("d5", INTRO + " " + LONG)]), ["question"], id_column="id")
    project.vectors.encode()
    stages: list[str] = []
    after = project.clusters.cut(0.8, progress=lambda p: stages.append(p.stage))
    assert "neighbours of new texts" in stages and replayed == [1]   # updated, re-cut
    with Project.open(project.path) as fresh:       # a new process: the whole cut
        fresh.model.attach(encoder, is_default=True)
        whole = fresh.clusters.cut(0.8)
    assert as_compared(after) == as_compared(whole)
    members = [{m.id for m in c.members} for c in after]
    assert {"d1", "d4", "d5"} in members and {"d2", "d3"} in members
