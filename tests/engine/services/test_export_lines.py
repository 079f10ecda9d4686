"""The every-row CSV export's Arrow path writes the same bytes as the csv module's path.

`ExportLines.csv_page` (Arrow) must write, byte for byte, the file `write_rows` (the csv
module, excel dialect, neutralised) writes for the same rows: the reference is the path
every export took before, unchanged. Checked on random hostile cells (formula starts,
quotes, separators, line breaks, NUL, non-ASCII, cells missing or null, numbers a page must
fall back for), random id columns, clusters and decisions, and on a real project file.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.dedup.row_clusters import Cluster, Member
from engine.io.writers import write_csv_pages, write_rows
from engine.services.export_lines import ExportLines, is_dropped
from engine.services.exports import ADDED_COLUMNS, DEDUPLICATED
from engine.store import items as item_store
from engine.store import sources as source_store
from engine.store.items import CellPage

HOSTILE = ["=", "+", "-", "@", "\t", "\r", "\n", "\r\n", ",", '"', "'", " ", ";", "\x00",
           "\x0b", "\u2028", "é", "😀", "0", "1.5", "a", "SUM(A1)"]
text = st.lists(st.sampled_from(HOSTILE) | st.characters(exclude_categories=("Cs",)),
                max_size=6).map("".join)
# What a JSON cell can hold: text and missing mostly; a number (or NaN) makes its page take
# the row-by-row path, which must give the same bytes too.
cell = st.one_of(text, text, text, st.none(), st.integers(-5, 5),
                 st.floats(allow_nan=True, allow_infinity=False))


@st.composite
def exports(draw):
    columns = draw(st.lists(text, min_size=0, max_size=4, unique=True))
    id_choices = st.none() | (st.sampled_from(columns) if columns else st.none()) | text
    sources = {sid: {"id": sid, "id_column": draw(id_choices)}
               for sid in range(1, draw(st.integers(1, 3)) + 1)}
    count = draw(st.integers(1, 25))
    ids = sorted(draw(st.sets(st.integers(1, 10_000), min_size=count, max_size=count)))
    rows = []
    for item_id in ids:
        extra = {c: draw(cell) for c in columns if draw(st.booleans())}
        if draw(st.booleans()):
            extra[draw(text)] = draw(text)        # a key the output has no column for
        rows.append((item_id, draw(st.sampled_from(sorted(sources))),
                     draw(st.none() | text), extra))
    placed = {}
    free = list(ids)
    while len(free) >= 2 and draw(st.booleans()):
        size = draw(st.integers(2, min(4, len(free))))
        chosen = [free.pop(draw(st.integers(0, len(free) - 1))) for _ in range(size)]
        members = [Member(i, draw(text), 0, 1, "", draw(st.floats(-1, 1)), 0,
                          draw(st.sampled_from(["", "duplicate", "not duplicate",
                                                "canonical"])))
                   for i in chosen]
        cluster = Cluster(draw(text), members)
        placed.update({m.item_id: (cluster, m) for m in members})
    return columns, sources, rows, placed, draw(st.booleans())


def page_of(rows) -> CellPage:
    """The page the store hands over, with the cells as SQLAlchemy stores them."""
    ids, source_ids, ext_ids, extras = zip(*rows, strict=True)
    return CellPage(np.array(ids, dtype=np.int64), np.array(source_ids, dtype=np.int64),
                    list(ext_ids), "\n".join(json.dumps(e) for e in extras).encode())


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(exports())
def test_arrow_pages_write_the_csv_modules_bytes(tmp_path, drawn):
    columns, sources, rows, placed, dedupe = drawn
    dropped = {i for i, found in placed.items() if is_dropped(found)} if dedupe else set()
    lines = ExportLines(sources, columns, placed, dropped, "0.75")
    header = [*columns, *ADDED_COLUMNS]
    reference, fast = tmp_path / "reference.csv", tmp_path / "fast.csv"
    items = [{"id": i, "source_id": s, "ext_id": e, "extra": x} for i, s, e, x in rows]
    expected = write_rows(reference, header,
                          [lines.line(item) for item in items if item["id"] not in dropped])
    assert write_csv_pages(fast, header, [lines.csv_page(page_of(rows))]) == expected
    assert fast.read_bytes() == reference.read_bytes()


def test_a_text_only_page_takes_the_arrow_path():
    """The hypothesis test would pass if every page fell back; plain text must not."""
    sources = {1: {"id": 1, "id_column": "id"}}
    lines = ExportLines(sources, ["id", "q"], {}, threshold="0.75")
    page = page_of([(1, 1, "x", {"q": "=1+1"}), (2, 1, None, {"q": 'a,"b"\nc'})])
    data, count = lines.csv_page(page)
    assert isinstance(data, memoryview) and count == 2
    assert bytes(data) == lines.reference_page(page)[0] == \
        b'x,\'=1+1,,,,,,,1,0.75\r\n,"a,""b""\nc",,,,,,,1,0.75\r\n'


HOSTILE_ROWS = [
    ["id", "question", "zip", "note"],
    ["=a1", "How do I reset my password?", "08123", 'line one\nline "two"; three, four'],
    ["a2", "@How can I reset my password?", "-00001", "\r\nlead"],
    ["a3", "What is the capital of Peru?", "0", "+plain"],
    ["a4", "HOW do I   reset my password?", "08123", "\ttab"],
    ["a5", "Best recipe for banana bread", "", "é😀\u2028"],
]


@pytest.mark.parametrize("form", ["all", DEDUPLICATED])
def test_a_project_exports_the_reference_bytes(new_project, tmp_path, form):
    import csv

    from engine.services.exports import _all_items
    from engine.services.rows import source_columns

    src = tmp_path / "hostile.csv"
    with src.open("w", encoding="utf-8", newline="") as fh:
        csv.writer(fh).writerows(HOSTILE_ROWS)
    project = new_project()
    project.rows.import_table(src, ["question"], id_column="id")
    project.vectors.encode()
    clusters = project.clusters.cut(0.9)
    placed = {m.item_id: (c, m) for c in clusters for m in (*c.members, *c.rejected)}
    dropped = {i for i, f in placed.items() if is_dropped(f)} if form == DEDUPLICATED else set()
    assert len(placed) >= 2 and (form == "all" or dropped)
    out, reference = tmp_path / "out.csv", tmp_path / "reference.csv"
    assert project.exports.rows(out, clusters, 0.9, form=form) == 5 - len(dropped)
    with project.store.read() as conn:
        sources = {s["id"]: s for s in source_store.list_sources(conn)}
        columns = source_columns(list(sources.values()))
        lines = ExportLines(sources, columns, placed, dropped, "0.9")
        write_rows(reference, [*columns, *ADDED_COLUMNS],
                   map(lines.line, _all_items(conn, dropped)))
        page = item_store.cell_page_after(conn, 0, 100)
    assert out.read_bytes() == reference.read_bytes()
    assert len(page.ids) == 5 and page.ids.tolist() == sorted(page.ids.tolist())


def test_pages_hold_what_the_rows_hold(store_location, encoder, tmp_path):
    """The page the store hands over (SQLite: one aggregated row; PostgreSQL: the driver's
    tuples) is the rows' own values, page by page, and the export of it is the csv
    module's."""
    from engine.project import Project

    src = tmp_path / "rows.csv"
    src.write_text("id,question,extra\n" + "".join(
        f'{i if i % 3 else ""},"=question {i}, with ""quotes""\nand a break",x{i}\n'
        for i in range(1, 26)), encoding="utf-8")
    with Project.open(store_location, create=True) as project:
        project.model.attach(encoder, is_default=True)
        project.rows.import_table(src, ["question"], id_column="id")
        with project.store.read() as conn:
            expected = [(r["id"], r["source_id"], r["ext_id"], r["extra"])
                        for r in item_store.items_after(conn, 0, 100)]
            got, after = [], 0
            while page := item_store.cell_page_after(conn, after, 7):
                assert len(page.ids) <= 7
                after = int(page.ids[-1])
                got += [(i, s, e, json.loads(c)) for i, s, e, c in page.rows()]
            sources = {s["id"]: s for s in source_store.list_sources(conn)}
        out, reference = tmp_path / "out.csv", tmp_path / "reference.csv"
        assert project.exports.rows(out, [], 0.8) == 25
    assert got == expected and len(got) == 25
    lines = ExportLines(sources, ["id", "question", "extra"], {}, threshold="0.8")
    write_rows(reference, ["id", "question", "extra", *ADDED_COLUMNS],
               [lines.line({"id": i, "source_id": s, "ext_id": e, "extra": x})
                for i, s, e, x in expected])
    assert out.read_bytes() == reference.read_bytes()
