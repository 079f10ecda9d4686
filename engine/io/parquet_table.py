"""Parquet files: open, list the columns and stream rows a record batch at a time.

Parquet columns are typed, and a table of questions may still carry lists, structs, maps,
binary blobs, dates or decimals beside its text. Each becomes the text a person would read:
nested values as JSON (as JSON Lines does), bytes as UTF-8 text when they are text and as
hex when they are not, anything else as `str`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import InputError
from engine.io.limits import CHUNK_CHARS
from engine.io.records import Rows, cannot_read, cell_text

if TYPE_CHECKING:  # pragma: no cover - pyarrow is imported when a Parquet file is opened
    import pyarrow.parquet as pq


def open_parquet(path: Path) -> pq.ParquetFile:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise _bad_parquet(path, err) from err


def parquet_batch_rows(parquet: pq.ParquetFile, chunk_rows: int) -> int:
    """Rows to decode at once: `chunk_rows`, or fewer when the file's rows are big.

    A batch is decoded whole before `iter_table` can cut it into chunks, so its size comes
    from the file's own statistics: the uncompressed bytes per row of its biggest row group.
    """
    metadata = parquet.metadata
    per_row = max((metadata.row_group(i).total_byte_size / max(metadata.row_group(i).num_rows, 1)
                   for i in range(metadata.num_row_groups)), default=0)
    return max(1, min(chunk_rows, int(CHUNK_CHARS // max(per_row, 1))))


def parquet_records(path: Path, parquet: pq.ParquetFile, chunk_rows: int) -> Rows:
    """Rows of a Parquet file, a record batch at a time, numbered from 1."""
    import pyarrow as pa

    batches = parquet.iter_batches(batch_size=chunk_rows)
    number = 0
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                return
            columns = [[_parquet_text(v) for v in column.to_pylist()]
                       for column in batch.columns]
        except (pa.ArrowException, OSError, UnicodeDecodeError, ValueError,
                OverflowError) as err:  # undecodable strings, dates out of Python's range
            raise _bad_parquet(path, err) from err
        for cells in zip(*columns, strict=True):
            number += 1
            yield number, list(cells)


def _parquet_text(value: object) -> str:
    if isinstance(value, bytes):
        return _bytes_text(value)
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    return cell_text(value)


def _bytes_text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        return value.hex()


def _json_default(value: object) -> object:
    """Values inside lists and structs that JSON has no type for: bytes, dates, decimals."""
    return _bytes_text(value) if isinstance(value, bytes) else str(value)


def _bad_parquet(path: Path, err: Exception) -> InputError:
    import pyarrow as pa

    if isinstance(err, OSError) and not isinstance(err, pa.ArrowException):
        return cannot_read(path, err)
    return InputError(f"{path.name}: is not a valid Parquet file")
