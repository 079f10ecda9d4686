"""Two rows' long texts side by side: the passages they share and how much of each."""

from __future__ import annotations

import csv

from sqlalchemy import select

from engine.store.schema import items
from tests.engine.encoding.test_windows import LONG, QUESTIONS

INTRO = " ".join(f"Weather note {i}: light rain is expected over the northern hills, with"
                 f" winds from the west and cooler nights." for i in range(25))


def _table(path, rows):
    """A one-column CSV of `rows` at `path` (returned)."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(["text"])
        for row in rows:
            writer.writerow([row])
    return path


def test_a_document_with_a_new_introduction_holds_the_original(new_project, tmp_path):
    src = _table(tmp_path / "docs.csv", [LONG, INTRO + " " + LONG, *QUESTIONS])
    project = new_project()
    project.rows.import_table(src, ["text"])
    project.vectors.encode()
    with project.store.read() as conn:
        ids = [int(i) for i in conn.execute(select(items.c.id).order_by(items.c.id)).scalars()]
    original, prefixed, q1, q2 = ids[0], ids[1], ids[2], ids[3]
    pair = project.documents.pair(original, prefixed, threshold=0.9)
    assert pair is not None and pair.text_a == LONG
    assert pair.held_a > 0.95          # all of the original is in the longer one
    assert pair.held_b < 0.85          # the new introduction is not in the original
    assert pair.similarity > 0.95
    first = pair.passages[0]
    assert pair.text_a[first.a_start:first.a_end] in pair.text_b
    # The other way round, the shares swap.
    back = project.documents.pair(prefixed, original, threshold=0.9)
    assert (back.held_a, back.held_b) == (pair.held_b, pair.held_a)
    # The graph, the cut and the export read the same similarity.
    graph = project.clusters.graph()
    assert max(graph.sims) >= pair.similarity - 1e-6
    assert [sorted(m.item_id for m in c.members)
            for c in project.clusters.cut(threshold=0.9)] == [[original, prefixed]]
    # Both long texts have a MinHash signature: the runs they share come with the pair,
    # and the similarity is at least what those runs read as on the similarity scale.
    from engine.documents.minhash import on_similarity_scale

    assert pair.runs_shared is not None and 0.0 < pair.runs_shared <= 1.0
    assert pair.similarity >= on_similarity_scale(pair.runs_shared) - 1e-9
    # Two questions: nothing to show beyond the word diff.
    assert project.documents.pair(q1, q2) is None
    assert project.documents.pair(original, q1).windows_b == 1
    assert project.documents.pair(original, q1).runs_shared is None   # a question has none


def test_a_checked_files_long_row_is_read_whole_and_scored_as_the_graph_scores(new_project,
                                                                              tmp_path):
    """Check a file: a row that is a project document with a new introduction finds that
    document at the similarity the project's own graph would give the pair."""
    src = _table(tmp_path / "project.csv", [LONG, *QUESTIONS])
    project = new_project()
    project.rows.import_table(src, ["text"])
    project.vectors.encode()
    checked = tmp_path / "checked.csv"
    _table(checked, [INTRO + " " + LONG, QUESTIONS[0]])
    result = project.matching.check_file(checked, ["text"], k=2)
    document, question = result.rows
    assert document.matches[0].text == LONG and document.matches[0].score > 0.95
    assert document.matches[0].passage is not None
    # A question still gets its plain cosine: itself, 1.0.
    assert question.matches[0].text == QUESTIONS[0]
    assert abs(question.matches[0].score - 1.0) < 1e-5
    # The same pair, imported, gets the same similarity in the graph.
    project.rows.import_table(checked, ["text"])
    project.vectors.encode()
    graph = project.clusters.graph()
    assert abs(float(graph.sims.max()) - document.matches[0].score) < 2e-3


def test_the_export_says_how_much_each_row_shares_with_its_canonical(new_project, tmp_path):
    src = _table(tmp_path / "docs.csv", [LONG, INTRO + " " + LONG, *QUESTIONS])
    project = new_project()
    project.rows.import_table(src, ["text"])
    project.vectors.encode()
    clusters = project.clusters.cut(threshold=0.9)
    assert len(clusters) == 1
    canonical = clusters[0].canonical.item_id
    other = next(m.item_id for m in clusters[0].members if m.item_id != canonical)
    expected = project.documents.pair(canonical, other, threshold=0.9)
    for suffix in (".csv", ".xlsx"):
        out = tmp_path / f"export{suffix}"
        project.exports.rows(out, clusters, 0.9)
        import pandas as pd

        frame = (pd.read_csv(out, dtype=str, keep_default_na=False) if suffix == ".csv"
                 else pd.read_excel(out, dtype=str, keep_default_na=False))
        assert list(frame.columns)[-3:] == ["resemblance", "share_in_canonical",
                                           "share_of_canonical"]
        member = frame[frame["is_canonical"].str.lower() == "false"]
        member = member[member["cluster_id"] != ""]
        assert len(member) == 1
        row = member.iloc[0]
        assert float(row["share_in_canonical"]) == round(expected.held_b, 4)
        assert float(row["share_of_canonical"]) == round(expected.held_a, 4)
        assert 0 < float(row["resemblance"]) <= 1
        assert (frame[frame["cluster_id"] == ""]["resemblance"] == "").all()


def test_a_project_of_questions_exports_the_columns_it_always_had(open_questions, tmp_path):
    from engine.services.exports import ADDED_COLUMNS

    out = tmp_path / "questions.csv"
    open_questions.exports.rows(out, open_questions.clusters.cut(threshold=0.75), 0.75)
    header = out.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[-len(ADDED_COLUMNS):] == ADDED_COLUMNS


def test_long_texts_are_read_whole_on_both_stores(store_location, encoder, tmp_path):
    """Windows and signatures are written and read back the same on SQLite and PostgreSQL:
    the copy with a new introduction is cut with its original there too."""
    from engine.project import Project

    src = _table(tmp_path / "both.csv", [LONG, INTRO + " " + LONG, *QUESTIONS])
    with Project.open(store_location, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(src, ["text"])
        report = project.vectors.encode()
        assert report.windowed == 2
        clusters = project.clusters.cut(threshold=0.9)
        assert [len(c.members) for c in clusters] == [2]
        first, second = (m.item_id for m in clusters[0].members)
        assert project.documents.pair(first, second).similarity > 0.95
        graph = project.clusters.graph()
        with project.store.read() as conn:
            long_ids = sorted(int(t) for t in conn.execute(
                select(items.c.text_id).where(items.c.id.in_([first, second]))).scalars())
        marked = graph.ids[graph.documents].tolist() if graph.documents is not None else []
        assert marked == long_ids
    # Read back (the project's stored graph, or the team's), the documents are marked
    # again, so the cut keeps them whole the same way.
    with Project.open(store_location) as project:
        again = project.clusters.graph()
        assert again is not graph and again.documents is not None
        assert again.ids[again.documents].tolist() == long_ids
        assert [[m.item_id for m in c.members] for c in project.clusters.cut(threshold=0.9)] \
            == [[first, second]]
