"""Parquet columns that are not strings: nested lists, structs, maps, binary, dates."""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq

from tests.engine.io.importing import import_or_refuse, refusal, stored_rows


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
