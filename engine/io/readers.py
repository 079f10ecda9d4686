"""Open a table file of any supported kind and stream it as text-only DataFrames.

Every reader hands out the same shape (str cells, clean unique column names, an index of
stable 1-based data row numbers) so importing, evaluation and previews never care whether
the user brought CSV, Excel, Parquet or JSON Lines. Files may be far bigger than memory, so
nothing here reads a whole table at once, and every problem a user can fix is raised as a
one-line `InputError` naming the file, never as a parser's traceback. Hostile files (zip
bombs, rows without end, thousands of columns) meet the caps of engine/io/limits.py.

This module chooses the reader by file kind; each kind's own module reads it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import InputError
from engine.io import sniff
from engine.io.delimited import choose_delimiter, csv_rows, decoded_sample
from engine.io.json_lines import jsonl_keys, jsonl_records
from engine.io.limits import CHUNK_CELLS, CHUNK_CHARS
from engine.io.parquet_table import open_parquet, parquet_batch_rows, parquet_records
from engine.io.records import (
    PathLike,
    ReadReport,
    Rows,
    TableFormat,
    TablePreview,
    cannot_read,
    clean_names,
    shown,
)
from engine.io.text_lines import text_lines
from engine.io.workbook import pick_sheet, sheet_names, sheet_rows

if TYPE_CHECKING:  # pragma: no cover - pandas is imported when a table is read
    import pandas as pd

_KINDS = {
    ".csv": "csv", ".tsv": "csv", ".txt": "csv",
    ".xlsx": "xlsx", ".xlsm": "xlsx",
    ".parquet": "parquet", ".pq": "parquet",
    ".jsonl": "jsonl", ".ndjson": "jsonl",
}
_NAMES_SHOWN = 30  # column names a message lists; a wide table's would fill the screen


# -- public API -----------------------------------------------------------------------------


def detect_format(path: PathLike, *, sheet: str | None = None, encoding: str | None = None,
                  delimiter: str | None = None, quoting: bool | None = None) -> TableFormat:
    """Work out how to read `path`, checking on the way that it can be read at all.

    The kind comes from the extension. For text files the encoding and delimiter are guessed
    from the first megabyte unless given. For workbooks `sheet=None` means the first sheet.
    """
    path = Path(path)
    kind = _kind_of(path)
    _check_readable(path)
    if kind == "xlsx":
        return TableFormat("xlsx", sheet=pick_sheet(path, sheet_names(path), sheet))
    if kind == "parquet":
        with open_parquet(path):
            return TableFormat("parquet")
    encoding, text, complete = decoded_sample(path, encoding)
    if kind == "jsonl":
        return TableFormat("jsonl", encoding=encoding)
    delimiter = choose_delimiter(path, text, delimiter)
    if quoting is None:
        quoting = sniff.detect_quoting(text, delimiter, complete)
    return TableFormat("csv", encoding=encoding, delimiter=delimiter, quoting=quoting)


def preview_table(path: PathLike, n: int = 20, *, sheet: str | None = None,
                  encoding: str | None = None, delimiter: str | None = None) -> TablePreview:
    """The format, columns and first `n` data rows, reading no more of the file than that."""
    path = Path(path)
    fmt = detect_format(path, sheet=sheet, encoding=encoding, delimiter=delimiter)
    with contextlib.closing(iter_table(path, fmt, chunk_rows=max(n, 1))) as chunks:
        first = next(chunks).head(n)
    sheets = sheet_names(path) if fmt.kind == "xlsx" else []
    return TablePreview(fmt, list(first.columns), first.to_numpy().tolist(), sheets)


def read_columns(path: PathLike, fmt: TableFormat) -> list[str]:
    """The cleaned column names, reading only the header (or the schema)."""
    path = Path(path)
    fmt = _complete(path, fmt)
    if fmt.kind == "parquet":
        with open_parquet(path) as parquet:
            return clean_names(path, parquet.schema_arrow.names)
    if fmt.kind == "jsonl":
        return clean_names(path, jsonl_keys(path, fmt))
    with _table_rows(path, fmt) as rows:
        return clean_names(path, _header(path, fmt, rows))


def iter_table(path: PathLike, fmt: TableFormat, *, chunk_rows: int = 20_000,
               report: ReadReport | None = None) -> Iterator[pd.DataFrame]:
    """Stream the table as DataFrames of at most `chunk_rows` rows of str cells.

    The index is the 1-based data row number (the first record after the header is 1; for
    JSON Lines, the line number). It counts blank and skipped rows too, so a row keeps its
    number however the file is chunked. Rows whose cells are all empty are not yielded.
    A table without a single data row raises InputError rather than yielding nothing, so an
    import cannot quietly succeed with nothing in it. Wide tables come in fewer rows per
    chunk, so that a chunk never holds much more than `CHUNK_CELLS` cells.
    """
    if chunk_rows < 1:
        raise ValueError("chunk_rows must be at least 1")
    path = Path(path)
    fmt = _complete(path, fmt)
    report = report if report is not None else ReadReport()
    skipped_before = len(report.bad_lines)
    yielded = 0
    for frame in _frames(path, fmt, chunk_rows, report):
        yielded += len(frame)
        report.rows_read += len(frame)
        yield frame
    if yielded == 0:
        skipped = len(report.bad_lines) - skipped_before
        because = f" ({skipped} malformed rows skipped)" if skipped else ""
        raise InputError(f"{path.name}: the file has no data rows{because}")


def require_columns(path: PathLike, available: list[str], wanted: list[str]) -> None:
    """Fail before any import work when the user named a column the file does not have."""
    missing = [name for name in wanted if name not in available]
    if not missing:
        return
    noun = "column" if len(missing) == 1 else "columns"
    names = ", ".join(f'"{shown(name)}"' for name in missing)
    have = ", ".join(map(shown, available[:_NAMES_SHOWN])) if available else "(none)"
    if len(available) > _NAMES_SHOWN:
        have += f" and {len(available) - _NAMES_SHOWN:,} more"
    raise InputError(f"{Path(path).name}: no {noun} {names}; columns are: {have}")


# -- format detection -----------------------------------------------------------------------


def _kind_of(path: Path) -> str:
    kind = _KINDS.get(path.suffix.lower())
    if kind is None:
        raise InputError(f"{path.name}: unsupported file type; use one of: {' '.join(_KINDS)}")
    return kind


def _check_readable(path: Path) -> None:
    """One message for missing, folder and forbidden, whatever library would open the file."""
    if path.is_dir():
        raise InputError(f"{path.name}: cannot read (it is a folder)")
    try:
        with path.open("rb"):
            pass
    except OSError as err:
        raise cannot_read(path, err) from err


def _complete(path: Path, fmt: TableFormat) -> TableFormat:
    """Fill in what a hand-made TableFormat left out, the way detection would."""
    incomplete = (
        (fmt.kind in ("csv", "jsonl") and fmt.encoding is None)
        or (fmt.kind == "csv" and (fmt.delimiter is None or fmt.quoting is None))
        or (fmt.kind == "xlsx" and fmt.sheet is None)
    )
    if not incomplete:
        return fmt
    found = detect_format(path, sheet=fmt.sheet, encoding=fmt.encoding, delimiter=fmt.delimiter,
                          quoting=fmt.quoting)
    return replace(found, kind=fmt.kind)


# -- records of every kind ------------------------------------------------------------------


def _frames(path: Path, fmt: TableFormat, chunk_rows: int,
            report: ReadReport) -> Iterator[pd.DataFrame]:
    """Chunks of any kind of file, opening it once."""
    if fmt.kind == "parquet":
        with open_parquet(path) as parquet:
            columns = clean_names(path, parquet.schema_arrow.names)
            chunk_rows = _rows_per_chunk(chunk_rows, len(columns))
            batch = parquet_batch_rows(parquet, chunk_rows)
            yield from _chunked(parquet_records(path, parquet, batch), columns, chunk_rows)
    elif fmt.kind == "jsonl":
        keys = jsonl_keys(path, fmt)
        columns = clean_names(path, keys)
        yield from _chunked(jsonl_records(path, fmt, keys, report), columns,
                            _rows_per_chunk(chunk_rows, len(columns)))
    else:
        with _table_rows(path, fmt) as rows:
            columns = clean_names(path, _header(path, fmt, rows))
            yield from _chunked(_fitted(fmt, rows, len(columns), report), columns,
                                _rows_per_chunk(chunk_rows, len(columns)))


def _rows_per_chunk(chunk_rows: int, width: int) -> int:
    return max(1, min(chunk_rows, CHUNK_CELLS // max(width, 1)))


def _chunked(records: Rows, columns: list[str], chunk_rows: int) -> Iterator[pd.DataFrame]:
    """Gather numbered rows into DataFrames, leaving out rows with nothing in them; a chunk
    ends at `chunk_rows` rows or `CHUNK_CHARS` characters, whichever comes first."""
    numbers: list[int] = []
    rows: list[list[str]] = []
    chars = 0
    for number, cells in records:
        if not any(cells):
            continue
        numbers.append(number)
        rows.append(cells)
        chars += sum(map(len, cells))
        if len(rows) == chunk_rows or chars >= CHUNK_CHARS:
            yield _frame(rows, numbers, columns)
            numbers, rows, chars = [], [], 0
    if rows:
        yield _frame(rows, numbers, columns)


def _frame(rows: list[list[str]], numbers: list[int], columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns, index=numbers, dtype=str)


# -- CSV and sheets -------------------------------------------------------------------------


@contextlib.contextmanager
def _table_rows(path: Path, fmt: TableFormat) -> Iterator[Rows]:
    """Raw rows of a CSV file or a sheet, numbered by line (CSV) or sheet row."""
    if fmt.kind == "xlsx":
        with sheet_rows(path, fmt) as rows:
            yield rows
    else:
        with text_lines(path, fmt, multiline=True) as lines:
            yield csv_rows(path, lines, fmt.delimiter or ",", fmt.quoting is not False)


def _header(path: Path, fmt: TableFormat, rows: Rows) -> list[str]:
    """The first row with anything in it; a sheet's header loses its trailing empty cells,
    which are usually formatting rather than columns."""
    for _, cells in rows:
        if any(cells):
            if fmt.kind == "xlsx":
                while not cells[-1]:
                    cells.pop()
            return cells
    where = f"sheet {fmt.sheet!r} is empty" if fmt.kind == "xlsx" else "the file is empty"
    raise InputError(f"{path.name}: {where} (no rows)")


def _fitted(fmt: TableFormat, rows: Rows, width: int, report: ReadReport) -> Rows:
    """Rows after the header, numbered from 1 and fitted to the header's width.

    A CSV row with more fields than the header cannot be matched to columns, so it is
    skipped and its line recorded, unless the extra fields are empty (a trailing delimiter).
    Sheets often hold notes right of the table, so there extra cells are dropped instead.
    Shorter rows are padded with "". Empty rows are passed on unpadded (they are dropped
    later): a sheet's gaps in row numbers come as empty rows, and padding a million of them
    to 16,384 columns would take minutes.
    """
    for number, (line, cells) in enumerate(rows, start=1):
        if not any(cells):
            yield number, []
        elif fmt.kind == "csv" and any(cells[width:]):
            report.bad_lines.append(line)
        else:
            yield number, cells[:width] + [""] * (width - len(cells))
