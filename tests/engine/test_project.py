import csv
import shutil

import numpy as np
import openpyxl
import pytest

from engine.errors import InputError
from engine.index.side_file import folder_for
from engine.project import Project
from engine.services.summary import COUNTS, describe
from engine.store.schema import blobs, indexes


@pytest.fixture
def imported(new_project, data_dir):
    project = new_project()
    report = project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    project.vectors.encode()
    return project, report


def test_import_counts_empty_and_exact_duplicates(imported):
    project, report = imported
    assert report.rows_read == 50
    assert report.rows_empty == 2                      # q43 empty, q44 whitespace only
    assert report.rows_imported == 48
    assert report.exact_duplicates == 2                # q41 and q42 repeat q1
    info = project.info()
    assert info["items"] == 48 and info["texts"] == 46
    assert info["encoded"] == 46 and info["index_items"] == 46   # encoded once per text
    assert info["model"] == "all-MiniLM-L6-v2" and info["device"] == "cpu"
    # what a window opens with: the same, less the counts that scan every row
    described = describe(project.store, project.model.row())
    assert described == {k: v for k, v in info.items() if k not in COUNTS}
    assert list(info)[:6] == ["project", "schema_version", *COUNTS]   # `info --json`


def test_search_finds_the_near_duplicate_first(imported):
    project, _ = imported
    hits = project.search("which city is australia's capital", k=5)
    assert hits[0].id in {"q6", "q7"} and hits[1].id in {"q6", "q7"}
    assert hits[0].score > 0.8 and hits[0].score >= hits[1].score >= hits[-1].score
    python = project.search("quickest way to learn python", k=3)
    q1 = next(h for h in python if h.id == "q1")
    assert q1.copies == 3                           # q1, q41, q42 folded into one hit
    assert project.search("   ") == []


def test_search_is_cached_until_the_index_changes(imported, tmp_path):
    project, _ = imported
    first = project.search("why is the sky blue", k=3)
    assert project.search("why is the sky blue", k=3) is first
    extra = tmp_path / "extra.csv"
    extra.write_text("question\nWhat gives the sky its blue colour?\n")
    project.rows.import_table(extra, ["question"])
    project.vectors.encode()
    again = project.search("why is the sky blue", k=3)
    assert again is not first
    assert "What gives the sky its blue colour?" in [h.text for h in again]


def test_reimport_adds_nothing_and_append_encodes_only_new_rows(imported, data_dir, tmp_path):
    project, _ = imported
    again = project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
    assert again.already_imported and project.info()["items"] == 48
    more = tmp_path / "more.csv"
    more.write_text("question\nHow do I learn Python quickly?\nHow do bees make honey?\n")
    report = project.rows.import_table(more, ["question"])
    assert report.rows_imported == 2 and report.new_texts == 1
    enc = project.vectors.encode()
    assert enc.encoded == 1
    assert project.info()["items"] == 50 and project.info()["encoded"] == 47


def test_duplicate_clusters_do_not_chain_and_keep_exact_copies_together(imported):
    project, _ = imported
    clusters = project.clusters.cut(threshold=0.75)
    by_id = {m.id: c for c in clusters for m in c.members}
    assert by_id["q1"] is by_id["q41"] is by_id["q42"]
    assert by_id["q6"] is by_id["q7"]
    assert "q36" not in by_id                            # the Mona Lisa has no twin
    vectors = {}
    for c in clusters:
        canonical = c.canonical
        assert canonical.score == 1.0
        for m in c.members:
            assert m.score >= 0.75 - 1e-6
            vectors.setdefault(m.text, None)
    # Re-cutting at another threshold uses the cached graph: no new search.
    graph = project.clusters.graph()
    stricter = project.clusters.cut(threshold=0.9)
    assert project.clusters.graph() is graph
    assert sum(len(c.members) for c in stricter) <= sum(len(c.members) for c in clusters)


def test_similarities_match_exact_cosine(imported, encoder):
    project, _ = imported
    clusters = project.clusters.cut(threshold=0.75)
    c = next(c for c in clusters if len({m.text for m in c.members}) >= 2)
    texts = [m.text for m in c.members]
    v = encoder.encode(texts)
    for m, vec in zip(c.members, v, strict=True):
        assert abs(float(vec @ v[0]) - m.score) < 1e-3


def test_export_has_original_columns_and_neutralises_formulas(new_project, tmp_path):
    project = new_project()
    src = tmp_path / "formulas.csv"
    src.write_text("id,question,note\n"
                   "a1,How do I reset my password?,=HYPERLINK(\"http://x\")\n"
                   "a2,How can I reset my password?,+1\n"
                   "a3,What is the capital of Peru?,plain\n")
    project.rows.import_table(src, ["question"], id_column="id")
    project.vectors.encode()
    clusters = project.clusters.cut(threshold=0.8)
    out = tmp_path / "clusters.xlsx"
    assert project.exports.clusters(out, clusters, 0.8) == 2
    sheet = openpyxl.load_workbook(out).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("id", "question", "note", "cluster_id", "canonical_id", "duplicate_of",
                       "similarity", "is_canonical", "decision", "first_seen", "threshold")
    assert {r[3] for r in rows[1:]} == {"C000001"} and {r[9] for r in rows[1:]} == {1}
    notes = {r[0]: r[2] for r in rows[1:]}
    assert notes == {"a1": "'=HYPERLINK(\"http://x\")", "a2": "'+1"}
    assert all(isinstance(r[6], int | float) and 0.8 <= r[6] <= 1 for r in rows[1:])
    out_csv = tmp_path / "clusters.csv"
    project.exports.clusters(out_csv, clusters, 0.8)
    with out_csv.open(encoding="utf-8-sig") as fh:
        records = list(csv.DictReader(fh))
    assert {r["note"] for r in records} == {"'=HYPERLINK(\"http://x\")", "'+1"}
    assert sum(r["is_canonical"] == "True" for r in records) == 1


def test_corrupt_index_blob_is_rebuilt_from_embeddings(imported):
    project, _ = imported
    path = project.path
    expected = [h.id for h in project.search("how do I fix a flat tire", k=3)]
    with project.store.write() as conn:
        data = conn.execute(blobs.select()).mappings().first()
        damaged = bytearray(data["data"])
        damaged[len(damaged) // 2] ^= 0xFF
        conn.execute(blobs.update().where(blobs.c.name == data["name"],
                                          blobs.c.seq == data["seq"]).values(data=bytes(damaged)))
    project.close()
    shutil.rmtree(folder_for(path))   # without the copy beside it, the blob decides
    reopened = Project.open(path)
    reopened.model.attach(project.model.encoder(), is_default=True)
    assert [h.id for h in reopened.search("how do I fix a flat tire", k=3)] == expected
    assert any("damaged" in n and "rebuilding" in n for n in reopened.notices)
    with reopened.store.read() as conn:
        row = conn.execute(indexes.select()).mappings().first()
    assert row["count"] == 46
    reopened.close()


def test_index_missing_items_are_added_on_open(imported, encoder):
    project, _ = imported
    index = project.vectors.index()
    index.mark_deleted(np.array([1, 2, 3]))        # simulate a stale saved index
    with project.store.write() as conn:
        from engine.index.persist import save_index
        save_index(conn, project.model.id(), index)
    path = project.path
    project.close()
    reopened = Project.open(path)
    reopened.model.attach(encoder, is_default=True)
    assert len(reopened.vectors.index()) == 46
    reopened.close()


def test_bad_column_leaves_project_as_it_was(imported, data_dir):
    project, _ = imported
    before = project.info()
    with pytest.raises(InputError, match="qestion"):
        project.rows.import_table(data_dir / "questions.csv", ["qestion"])
    assert project.info() == before


def test_a_text_column_with_no_text_is_refused_and_stores_nothing(tmp_path, data_dir):
    """Before, a column of blanks imported as 0 rows and N empty ones: a project with
    nothing to search and no word why. It is the user's mistake (the wrong column), so it
    is one line naming the column, and the transaction leaves the project as it was."""
    project = Project.open(tmp_path / "p.duplens", create=True)
    try:
        project.rows.import_table(data_dir / "questions.csv", ["question"], id_column="qid")
        before = project.info()
        blank = tmp_path / "blank.csv"
        blank.write_text("question,note,other\nHow?,,\nWhy?, ,  \n", encoding="utf-8")
        with pytest.raises(InputError) as caught:
            project.rows.import_table(blank, ["note"])
        assert str(caught.value) == ('blank.csv: column "note" has no text (its 2 rows are '
                                     'all blank); choose the column that holds the text')
        with pytest.raises(InputError, match=r'blank\.csv: columns "note", "other" have no '
                                             r"text \(its 2 rows are all blank\)"):
            project.rows.import_table(blank, ["note", "other"])
        assert project.info() == before
        assert len(project.rows.imports()) == 1
    finally:
        project.close()


def test_file_broken_halfway_imports_nothing(imported, tmp_path):
    project, _ = imported
    before = project.info()
    bad = tmp_path / "broken.csv"
    good_part = "".join(f"question {i}?\n" for i in range(30_000))
    bad.write_bytes(b"question\n" + good_part.encode() + b"caf\xe9 latin-1 here\n")
    with pytest.raises(InputError):
        project.rows.import_table(bad, ["question"], encoding="utf-8", chunk_rows=1000)
    assert project.info() == before


def test_huge_cell_is_stored_whole_and_flagged_truncated(new_project, tmp_path):
    project = new_project()
    src = tmp_path / "huge.csv"
    big = "lorem ipsum " * 400_000   # about 4.8 MB
    src.write_text("text\nshort one\n\"" + big + "\"\n", encoding="utf-8")
    project.rows.import_table(src, ["text"])
    report = project.vectors.encode()
    assert report.encoded == 2 and report.truncated == 1
    hits = project.search("lorem ipsum dolor", k=2)
    assert len(hits[0].text) == len(big.strip())
    assert project.info()["truncated"] == 1


def test_deleted_rows_leave_search_and_clusters(imported):
    project, _ = imported
    hits = project.search("which city is the capital of australia", k=2)
    q7 = next(h for h in hits if h.id == "q7")
    assert project.rows.delete([q7.item_id]) == 1
    assert "q7" not in [h.id for h in project.search("which city is the capital of australia")]
    assert project.info()["items"] == 47
    clusters = project.clusters.cut(threshold=0.75)
    assert "q7" not in {m.id for c in clusters for m in c.members}
    path = project.path
    encoder = project.model.encoder()
    project.close()
    reopened = Project.open(path)
    reopened.model.attach(encoder, is_default=True)
    assert len(reopened.vectors.index()) == 45
    assert "q7" not in [h.id for h in reopened.search("which city is the capital of australia")]
    reopened.close()
