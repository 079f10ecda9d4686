"""Row order for tables: filtering and sorting in the store, ids only, deleted rows left out."""

from __future__ import annotations

import numpy as np
import pytest

from engine.browse import (
    FILTER_ALL,
    SORT_PUBLIC_ID,
    SORT_TEXT,
    RowQuery,
    looks_numeric,
    order_by_notes,
    sorted_ids,
)
from engine.project import Project

ROWS = [  # ref, question, views, team
    ("r10", "banana bread recipe", "10", "Kitchen"),
    ("r9", "Apple pie recipe", "9", "kitchen"),
    ("r100", "cherry jam", "100", "Garden"),
    ("r2", "50% off apples?", "", "shop_floor"),
    ("r1", "apple cider", "1,200", "garden"),
    ("r3", "date squares", "3", "kitchen"),
]


@pytest.fixture
def project(tmp_path, store_location):
    csv = tmp_path / "rows.csv"
    lines = ["ref,question,views,team"] + [",".join(r) if "," not in r[2] else
                                           f'{r[0]},{r[1]},"{r[2]}",{r[3]}' for r in ROWS]
    csv.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Project.open(store_location, create=True) as p:
        p.rows.import_table(csv, ["question"], id_column="ref")
        yield p


def _refs(project: Project, query: RowQuery | None = None) -> list[str]:
    order = project.rows.order(query)
    return [r["id"] for r in project.rows.by_ids(order)]


def test_default_order_is_import_order_and_columns_leave_out_text_and_id(project):
    assert _refs(project) == [r[0] for r in ROWS]
    assert project.rows.columns() == ["views", "team"]
    assert _refs(project, RowQuery(descending=True)) == [r[0] for r in reversed(ROWS)]


def test_text_sorts_regardless_of_case(project):
    assert _refs(project, RowQuery(sort=SORT_TEXT)) == ["r2", "r1", "r9", "r10", "r100", "r3"]
    assert _refs(project, RowQuery(sort=SORT_TEXT, descending=True)) == \
        ["r3", "r100", "r10", "r9", "r1", "r2"]


def test_a_column_of_numbers_sorts_as_numbers_with_empty_cells_last(project):
    assert _refs(project, RowQuery(sort="views")) == ["r3", "r9", "r10", "r100", "r1", "r2"]
    assert _refs(project, RowQuery(sort="views", descending=True)) == \
        ["r1", "r100", "r10", "r9", "r3", "r2"]


def test_a_column_of_words_sorts_as_words_ties_in_import_order(project):
    assert _refs(project, RowQuery(sort="team")) == ["r100", "r1", "r10", "r9", "r3", "r2"]
    assert _refs(project, RowQuery(sort=SORT_PUBLIC_ID)) == \
        ["r1", "r10", "r100", "r2", "r3", "r9"]


def test_filter_is_a_literal_case_insensitive_substring(project):
    assert _refs(project, RowQuery(text_filter="APPLE")) == ["r9", "r2", "r1"]
    assert _refs(project, RowQuery(text_filter="50%")) == ["r2"]
    assert _refs(project, RowQuery(text_filter="%")) == ["r2"]       # not a wildcard
    assert _refs(project, RowQuery(text_filter="p_e")) == []         # nor is _
    assert _refs(project, RowQuery(text_filter="garden")) == []      # text only by default
    assert _refs(project, RowQuery(text_filter="garden", filter_column="team")) == \
        ["r100", "r1"]
    assert _refs(project, RowQuery(text_filter="jam", filter_column=FILTER_ALL)) == ["r100"]
    assert _refs(project, RowQuery(text_filter="kitchen", filter_column=FILTER_ALL,
                                   sort=SORT_TEXT)) == ["r9", "r10", "r3"]


def test_deleted_rows_are_neither_ordered_nor_read(project):
    first = project.rows.order()
    project.rows.delete([int(first[1])])
    assert "r9" not in _refs(project, RowQuery(sort=SORT_TEXT))
    assert [r["id"] for r in project.rows.by_ids(first)] == ["r10", "r100", "r2", "r1", "r3"]


@pytest.mark.parametrize("query", [RowQuery(), RowQuery(descending=True),
                                   RowQuery(sort="views", text_filter="e")])
def test_ids_come_a_slice_at_a_time_in_order(project, monkeypatch, query):
    """A table shows its first rows while the rest are read: each slice is handed over as
    it is read, and together they are the order, whatever the query."""
    from engine.store import items as item_store

    monkeypatch.setattr(item_store, "_ID_SLICE", 2)
    parts: list[np.ndarray] = []
    order = project.rows.order(query, on_part=parts.append)
    assert [len(p) for p in parts] == [2] * (len(order) // 2) + [1] * (len(order) % 2)
    assert np.concatenate(parts).tolist() == order.tolist() == project.rows.order(query).tolist()
    assert len(order) >= 4


def test_in_memory_helpers():
    ids = np.array([5, 6, 7, 8], dtype=np.int64)
    assert sorted_ids(ids, ["10", "9", "100", "9"]).tolist() == [6, 8, 5, 7]
    assert sorted_ids(ids, ["b", "A", "c", "a"], descending=True).tolist() == [7, 5, 6, 8]
    assert looks_numeric(["1", "2.5", "-3", "1,000"]) and not looks_numeric(["1", "x"])
    assert not looks_numeric([])
    notes = {7: 2, 5: 1, 9: 0}
    assert order_by_notes(ids, notes).tolist() == [5, 7, 6, 8]
    assert order_by_notes(ids, notes, descending=True).tolist() == [7, 5, 6, 8]
    assert order_by_notes(ids, {}).tolist() == ids.tolist()


def test_odd_cells_sort_as_sqlite_sorts_them_on_both_stores(tmp_path, store_location):
    """Cells a sample did not see: sorted as numbers, a cell sorts by the number it starts
    with, else as 0 (SQLite's CAST; PostgreSQL's would fail the whole sort on one word);
    sorted as words, by code point after lower case, whatever the server's collation."""
    from engine.store import items as item_store

    csv = tmp_path / "odd.csv"
    rows = [("r1", "one", "12 kg", "a b"), ("r2", "two", "abc", "ab"),
            ("r3", "three", "3", "a-c"), ("r4", "four", "1e2", "A_a"),
            ("r5", "five", "-4", "b"), ("r6", "six", ".5", "a.b")]
    csv.write_text("ref,question,size,label\n" + "".join(",".join(r) + "\n" for r in rows),
                   encoding="utf-8")
    with Project.open(store_location, create=True) as p:
        p.rows.import_table(csv, ["question"], id_column="ref")
        condition = item_store.row_filter("", None)

        def refs(key: str, numeric: bool) -> list[str]:
            with p.store.read() as conn:
                ids = item_store.sorted_item_ids(conn, key, condition, numeric=numeric,
                                                 descending=False)
            return [r["id"] for r in p.rows.by_ids(ids)]

        assert refs("size", numeric=True) == ["r5", "r2", "r6", "r3", "r1", "r4"]
        assert refs("label", numeric=False) == ["r1", "r3", "r6", "r4", "r2", "r5"]
