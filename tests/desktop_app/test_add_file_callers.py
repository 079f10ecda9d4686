"""Every way of adding a file leaves the same project: `duplens import`, `duplens match
--add`, the window's import and its Check a file → Add all run `engine.add_file`, and the
projects they leave hold the same rows, texts, embeddings and stored cluster ids (the new
rows placed in the recorded clusters by each of them), with the same changes listed since
the import. (`match --add` once skipped the placing: its rows had no cluster id.)"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from desktop_app.controllers.import_controller import ImportController
from desktop_app.controllers.match_controller import MatchController
from engine.add_file import ImportChoices
from engine.project import Project
from engine.store.schema import item_clusters, items
from tests.desktop_app.conftest import SIGNAL_TIMEOUT_MS, open_in
from tests.engine.cli.test_cli import run
from tests.engine.weekly_files import FIRST as WEEK1
from tests.engine.weekly_files import SECOND as WEEK2

# The weekly files, with a first-week question alone until the second week's paraphrase of
# it, and an exact repeat of a first-week row.
FIRST = WEEK1 + "s1,How do I bake sourdough bread?\n"
SECOND = WEEK2 + "s2,What is the best way to bake sourdough bread?\nt1,Why is the sky blue?\n"

THRESHOLD = 0.8


def base_project(path: Path, first: Path, encoder) -> Path:
    """The first week's file, encoded with the session's model, its clusters cut at
    `THRESHOLD` (so their ids are recorded and an import places its rows in them)."""
    with Project.open(path, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(first, ["question"], id_column="id")
        project.vectors.encode()
        project.clusters.cut(THRESHOLD)
    return path


def left(path: Path) -> dict:
    """What a project holds after the second file: each row (by its id and import) with its
    text and stored cluster id, the cluster ids' partition, the changes since import 2, and
    the embeddings of every text."""
    with Project.open(path, read_only=True) as project:
        with project.store.read() as conn:
            rows = conn.execute(
                select(items.c.id, items.c.ext_id, items.c.source_id, items.c.text,
                       item_clusters.c.cluster_id)
                .select_from(items.outerjoin(item_clusters,
                                             item_clusters.c.item_id == items.c.id))
                .where(items.c.deleted.is_(False)).order_by(items.c.id)).all()
            text_ids = sorted(t for (t,) in conn.execute(select(items.c.text_id).distinct()))
        named = {r.id: (r.ext_id, r.source_id) for r in rows}
        changes = {named[i]: c.change for i, c in project.ids.changes_since(2).items()}
        vectors = project.vectors.vectors(text_ids)
    return {"rows": [(r.ext_id, r.source_id, r.text, r.cluster_id) for r in rows],
            "changes": changes, "vectors": vectors}


@pytest.mark.slow
def test_the_four_ways_of_adding_a_file_leave_the_same_project(qtbot, bridge, encoder,
                                                               tmp_path):
    first, second = tmp_path / "week1.csv", tmp_path / "week2.csv"
    first.write_text(FIRST, encoding="utf-8")
    second.write_text(SECOND, encoding="utf-8")
    made = {way: base_project(tmp_path / f"{way}.duplens", first, encoder)
            for way in ("import", "match", "window", "check")}

    said = run("import", str(made["import"]), str(second), "--column", "question",
               "--id-column", "id").stderr
    assert f"clusters at {THRESHOLD:g} updated" in said
    said = run("match", str(made["match"]), str(second), "--column", "question",
               "--id-column", "id", "--add").stderr
    assert f"clusters at {THRESHOLD:g} updated" in said

    choices = ImportChoices(str(second), ["question"], id_column="id")
    open_in(qtbot, bridge, made["window"])
    imports = ImportController(bridge)
    with qtbot.waitSignal(imports.finished, timeout=SIGNAL_TIMEOUT_MS) as done:
        imports.start(choices)
    window_changes = done.args[0]["changes"]

    open_in(qtbot, bridge, made["check"])
    matches = MatchController(bridge)
    with qtbot.waitSignal(matches.checked, timeout=SIGNAL_TIMEOUT_MS):
        matches.check(choices)
    with qtbot.waitSignal(matches.added, timeout=SIGNAL_TIMEOUT_MS) as added:
        matches.add()
    assert added.args[0]["changes"] == window_changes
    bridge.shutdown()   # the last project closed: its file is read below

    projects = {way: left(path) for way, path in made.items()}
    expected = projects.pop("import")
    by_id = {ext: cluster for ext, _, _, cluster in expected["rows"]}
    # The truth of this file, not only agreement: the new Python question joined the first
    # week's Python cluster, the two cat questions made one of their own.
    assert by_id["p3"] == by_id["p1"] == by_id["p2"] is not None
    assert by_id["k1"] == by_id["k2"] is not None and by_id["k1"] != by_id["p1"]
    assert expected["changes"][("p3", 2)] == "joined"
    assert expected["changes"][("k1", 2)] == expected["changes"][("k2", 2)] == "new"
    assert window_changes == dict(Counter(expected["changes"].values()))
    for way, project in projects.items():
        assert project["rows"] == expected["rows"], way
        assert project["changes"] == expected["changes"], way
        np.testing.assert_allclose(project["vectors"], expected["vectors"], atol=1e-5,
                                   err_msg=way)
