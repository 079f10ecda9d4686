"""The neighbour graph is written on its own thread while the cut goes on
(`engine.services.graph_save.GraphSave`): the cut returns with it saved, and a failure to
write it reaches the caller instead of dying with the thread. A real project file; the
failure is SQLite's own, from a trigger."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from engine.project import Project
from engine.store.blobs import get_blob


def _graph_name(project: Project) -> str:
    return f"knn/{project.model.id()}/10"


def test_a_cut_returns_with_its_graph_saved(open_questions, encoder):
    project = open_questions
    clusters = [sorted(c.item_ids()) for c in project.clusters.cut(0.8)]
    with project.store.read() as conn:
        assert get_blob(conn, _graph_name(project))   # written before the cut returned
    assert not [t for t in threading.enumerate() if t.name == "duplens-graph-save"]
    path = project.path
    project.close()
    with Project.open(path) as reopened:
        reopened.model.attach(encoder, is_default=True)
        assert reopened.clusters.graph() is not None
        assert [sorted(c.item_ids()) for c in reopened.clusters.cut(0.8)] == clusters


def test_a_graph_that_cannot_be_written_fails_the_cut_that_made_it(open_questions):
    project = open_questions
    with sqlite3.connect(project.path) as db:
        db.execute("CREATE TRIGGER refuse_blobs BEFORE INSERT ON blobs "
                   "BEGIN SELECT RAISE(ABORT, 'blobs refused by the test'); END")
    with pytest.raises(Exception, match="blobs refused by the test"):
        project.clusters.cut(0.8)
    with sqlite3.connect(project.path) as db:
        db.execute("DROP TRIGGER refuse_blobs")
    assert project.clusters.cut(0.8)                  # the graph is kept in memory: no retry
