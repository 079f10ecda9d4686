"""Parquet columns that are not strings: nested lists, structs, maps, binary, dates."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from tests.engine.io.importing import FUZZ, import_or_refuse, refusal, scratch, stored_rows


def test_nested_binary_and_typed_columns_become_text(store, tmp_path) -> None:
    table = pa.table({
        "text": ["first question", "second"],
        "tags": pa.array([["a", "b"], []], pa.list_(pa.string())),
        "meta": pa.array([{"score": 1, "who": "x"}, None],
                         pa.struct([("score", pa.int64()), ("who", pa.string())])),
        "map": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int64())),
        "blob": pa.array([b"utf-8 text", b"\xff\x00\x81"], pa.binary()),
        "blobs": pa.array([[b"\xff"], None], pa.list_(pa.binary())),
        "when": pa.array([dt.date(2024, 2, 29), None], pa.date32()),
        "at": pa.array([dt.datetime(2024, 1, 1, 12), None], pa.timestamp("us")),
        "price": pa.array([decimal.Decimal("08.10"), None], pa.decimal128(5, 2)),
        "dict": pa.array(["x", "y"]).dictionary_encode(),
    })
    path = tmp_path / "typed.parquet"
    pq.write_table(table, path)
    report = import_or_refuse(store, path, columns=["text"])
    first, second = (extra for _, _, extra in stored_rows(store, report.source_id))
    assert first == {"text": "first question", "tags": '["a", "b"]',
                     "meta": '{"score": 1, "who": "x"}', "map": '[["k", 1]]',
                     "blob": "utf-8 text", "blobs": '["ff"]', "when": "2024-02-29",
                     "at": "2024-01-01 12:00:00", "price": "8.10", "dict": "x"}
    assert second == {"text": "second", "tags": "[]", "meta": "", "map": "", "blob": "ff0081",
                      "blobs": "", "when": "", "at": "", "price": "", "dict": "y"}


def test_duplicate_and_empty_column_names(store, tmp_path) -> None:
    table = pa.Table.from_arrays([pa.array(["a"]), pa.array(["b"]), pa.array(["c"])],
                                 names=["text", "text", ""])
    path = tmp_path / "dupes.parquet"
    pq.write_table(table, path)
    report = import_or_refuse(store, path, columns=["text"])
    [(_, _, extra)] = stored_rows(store, report.source_id)
    assert extra == {"text": "a", "text.1": "b", "column_3": "c"}


def test_a_parquet_file_without_rows_or_columns(store, tmp_path) -> None:
    empty = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), empty)
    assert refusal(store, empty) == "empty.parquet: the file has no data rows"
    bare = tmp_path / "bare.parquet"
    pq.write_table(pa.table({}), bare)
    assert refusal(store, bare, columns=["text"]).startswith('bare.parquet: no column "text"')


def test_files_that_are_not_parquet(store, tmp_path) -> None:
    for name, content in [("csv.parquet", b"id,text\n1,a\n"), ("cut.parquet", b"PAR1" * 3),
                          ("zip.parquet", b"PK\x03\x04" + bytes(100))]:
        path = tmp_path / name
        path.write_bytes(content)
        assert refusal(store, path) == f"{name}: is not a valid Parquet file"


def test_big_rows_are_decoded_in_smaller_batches(tmp_path) -> None:
    """A batch is decoded whole, so rows of a megabyte come 31 to a batch, not 20,000; the
    chunks handed out then end at the character budget (32 million)."""
    from engine.io import detect_format, iter_table
    from engine.io.parquet_table import open_parquet, parquet_batch_rows

    path = tmp_path / "documents.parquet"
    pq.write_table(pa.table({"text": [f"{i} " + "x" * 1_000_000 for i in range(40)]}), path)
    with open_parquet(path) as parquet:
        assert parquet_batch_rows(parquet, 20_000) == 31  # 1,000,003 bytes a row
        assert parquet_batch_rows(parquet, 10) == 10
    sizes = [len(chunk) for chunk in iter_table(path, detect_format(path))]
    assert sizes == [32, 8]


# -- any columns, found by hypothesis -------------------------------------------------------

_TYPES = {
    "string": (pa.string(), st.text(max_size=8)),
    "binary": (pa.binary(), st.binary(max_size=8)),
    "int": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "float": (pa.float64(), st.floats()),
    "bool": (pa.bool_(), st.booleans()),
    "list": (pa.list_(pa.string()), st.lists(st.text(max_size=4), max_size=3)),
    "struct": (pa.struct([("a", pa.int64()), ("b", pa.binary())]),
               st.fixed_dictionaries({"a": st.integers(-9, 9), "b": st.binary(max_size=3)})),
    "map": (pa.map_(pa.string(), pa.float64()),
            st.lists(st.tuples(st.text(max_size=3), st.floats()), max_size=2)),
    "date": (pa.date32(), st.dates()),
    "timestamp": (pa.timestamp("us"), st.datetimes()),
    "decimal": (pa.decimal128(12, 3), st.decimals(-(10**6), 10**6, places=3, allow_nan=False)),
}


@FUZZ
@given(st.data())
def test_tables_of_any_column_types_end_in_rows_or_one_clear_error(store, data) -> None:
    kinds = data.draw(st.lists(st.sampled_from(sorted(_TYPES)), min_size=1, max_size=5))
    names = data.draw(st.lists(st.text(max_size=4), min_size=len(kinds), max_size=len(kinds)))
    rows = data.draw(st.integers(0, 6))
    columns = [pa.array(data.draw(st.lists(st.none() | _TYPES[kind][1], min_size=rows,
                                           max_size=rows)), _TYPES[kind][0])
               for kind in kinds]
    table = pa.Table.from_arrays(columns, names=names)
    with scratch() as folder:
        path = folder / "any.parquet"
        pq.write_table(table, path)
        report = import_or_refuse(store, path)
        if report is None or report.already_imported:
            return
        stored = stored_rows(store, report.source_id)
        for position, kind in enumerate(kinds):
            if kind != "string":
                continue
            written = [value or "" for value in table.column(position).to_pylist()]
            name = list(stored[0][2])[position] if stored else None
            kept = [written[row - 1] for row, _, _ in stored]
            assert [extra[name] for _, _, extra in stored] == kept
