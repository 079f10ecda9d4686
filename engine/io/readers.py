"""Open a table file of any supported kind and stream it as text-only DataFrames.

Every reader hands out the same shape (str cells, clean unique column names, an index of
stable 1-based data row numbers) so importing, evaluation and previews never care whether
the user brought CSV, Excel, Parquet or JSON Lines. Files may be far bigger than memory, so
nothing here reads a whole table at once, and every problem a user can fix is raised as a
one-line `InputError` naming the file, never as a parser's traceback.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import json
import math
import os
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

import openpyxl
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from openpyxl.utils.exceptions import InvalidFileException

from engine.errors import InputError
from engine.io import sniff

_KINDS = {
    ".csv": "csv", ".tsv": "csv", ".txt": "csv",
    ".xlsx": "xlsx", ".xlsm": "xlsx",
    ".parquet": "parquet", ".pq": "parquet",
    ".jsonl": "jsonl", ".ndjson": "jsonl",
}
_JSONL_KEY_SCAN = 1000  # records whose keys make up a JSON Lines file's columns
_MAX_FIELD = 2**31 - 1  # csv's own limit is 128 KiB; a C long caps it on Windows

PathLike = str | os.PathLike[str]
_Records = Iterator[tuple[int, list[str]]]


@dataclass(frozen=True)
class TableFormat:
    """How to read a file: what detection found, or what the user insisted on."""

    kind: str  # "csv" (any delimiter), "xlsx", "parquet", "jsonl"
    encoding: str | None = None  # text formats only
    delimiter: str | None = None  # csv only
    sheet: str | None = None  # xlsx only: the sheet actually used


@dataclass
class TablePreview:
    """The first rows of a file, for the import wizard to show before anything is stored."""

    format: TableFormat
    columns: list[str]
    rows: list[list[str]]
    sheets: list[str]  # xlsx sheet names, [] otherwise


@dataclass
class ReadReport:
    """What streaming a table skipped, so the user learns which lines did not make it."""

    rows_read: int = 0  # data rows yielded
    bad_lines: list[int] = field(default_factory=list)  # 1-based lines of skipped rows


# -- public API -----------------------------------------------------------------------------


def detect_format(path: PathLike, *, sheet: str | None = None, encoding: str | None = None,
                  delimiter: str | None = None) -> TableFormat:
    """Work out how to read `path`, checking it can be read at all.

    The kind comes from the extension; for text files the encoding and delimiter are guessed
    from the first megabyte unless given. For workbooks `sheet=None` means the first sheet.
    """
    path = Path(path)
    kind = _kind_of(path)
    if kind == "xlsx":
        return TableFormat("xlsx", sheet=_pick_sheet(path, _sheet_names(path), sheet))
    if kind == "parquet":
        with _open_parquet(path):
            return TableFormat("parquet")
    encoding, text = _decoded_sample(path, encoding)
    if kind == "jsonl":
        return TableFormat("jsonl", encoding=encoding)
    return TableFormat("csv", encoding=encoding, delimiter=_delimiter(path, text, delimiter))


def preview_table(path: PathLike, n: int = 20, *, sheet: str | None = None,
                  encoding: str | None = None, delimiter: str | None = None) -> TablePreview:
    """The format, columns and first `n` rows, reading no more of the file than that."""
    path = Path(path)
    fmt = detect_format(path, sheet=sheet, encoding=encoding, delimiter=delimiter)
    with contextlib.closing(iter_table(path, fmt, chunk_rows=max(n, 1))) as chunks:
        first = next(chunks).head(n)
    sheets = _sheet_names(path) if fmt.kind == "xlsx" else []
    return TablePreview(fmt, list(first.columns), first.to_numpy().tolist(), sheets)


def read_columns(path: PathLike, fmt: TableFormat) -> list[str]:
    """The cleaned column names, reading only the header (or a schema)."""
    path = Path(path)
    fmt = _complete(path, fmt)
    if fmt.kind == "parquet":
        with _open_parquet(path) as parquet:
            return _clean_names(parquet.schema_arrow.names)
    if fmt.kind == "jsonl":
        return _clean_names(_jsonl_keys(path, fmt))
    with _table_rows(path, fmt) as (_, rows):
        return _clean_names(_header(path, fmt, rows)[1])


def iter_table(path: PathLike, fmt: TableFormat, *, chunk_rows: int = 20_000,
               report: ReadReport | None = None) -> Iterator[pd.DataFrame]:
    """Stream the table as DataFrames of at most `chunk_rows` rows of str cells.

    The index is the 1-based data row number (the first record after the header is 1). It
    counts blank and skipped lines too, so a row keeps its number however the file is
    chunked or cleaned up later. Blank lines and wholly empty sheet rows are not yielded.
    A table without a single data row raises InputError rather than yielding nothing, so
    an import cannot silently succeed with nothing in it.
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
    """Fail early, before any import work, when the user named a column the file lacks."""
    missing = [name for name in wanted if name not in available]
    if not missing:
        return
    noun = "column" if len(missing) == 1 else "columns"
    names = ", ".join(f'"{name}"' for name in missing)
    have = ", ".join(available) if available else "(none)"
    raise InputError(f"{Path(path).name}: no {noun} {names}; columns are: {have}")


# -- format detection -----------------------------------------------------------------------


def _kind_of(path: Path) -> str:
    kind = _KINDS.get(path.suffix.lower())
    if kind is None:
        known = " ".join(_KINDS)
        raise InputError(f"{path.name}: unsupported file type; use one of: {known}")
    return kind


def _complete(path: Path, fmt: TableFormat) -> TableFormat:
    """Fill in what a hand-made TableFormat left out, the way detection would."""
    missing = (
        (fmt.kind in ("csv", "jsonl") and fmt.encoding is None)
        or (fmt.kind == "csv" and fmt.delimiter is None)
        or (fmt.kind == "xlsx" and fmt.sheet is None)
    )
    if not missing:
        return fmt
    found = detect_format(path, sheet=fmt.sheet, encoding=fmt.encoding, delimiter=fmt.delimiter)
    return replace(found, kind=fmt.kind)


def _decoded_sample(path: Path, encoding: str | None) -> tuple[str, str]:
    """The encoding to use and the decoded sample, after ruling out binary and empty files."""
    try:
        sample = sniff.read_sample(path)
    except OSError as err:
        raise _cannot_read(path, err) from err
    kind = sniff.binary_kind(sample.data)
    if kind is not None:
        raise InputError(f"{path.name}: is not a text table (it looks like {kind})")
    encoding = encoding or sniff.detect_encoding(sample)
    try:
        text = sniff.decode_sample(sample, encoding)
    except LookupError as err:
        raise InputError(f"{path.name}: unknown encoding {encoding!r}") from err
    except UnicodeDecodeError as err:
        raise InputError(f"{path.name}: is not valid {encoding} text") from err
    if sniff.looks_binary(text):
        raise InputError(f"{path.name}: is not a text table (it contains binary data)")
    if not text.strip():
        raise InputError(f"{path.name}: the file is empty (no rows)")
    return encoding, text


def _delimiter(path: Path, text: str, delimiter: str | None) -> str:
    if delimiter is None:
        return sniff.detect_delimiter(text, "\t" if path.suffix.lower() == ".tsv" else ",")
    if len(delimiter) != 1:
        raise InputError(f"{path.name}: the delimiter must be one character, not {delimiter!r}")
    return delimiter


def _cannot_read(path: Path, err: OSError) -> InputError:
    return InputError(f"{path.name}: cannot read ({err.strerror or err})")


# -- rows of text files and sheets ----------------------------------------------------------


def _frames(path: Path, fmt: TableFormat, chunk_rows: int,
            report: ReadReport) -> Iterator[pd.DataFrame]:
    if fmt.kind == "parquet":
        yield from _parquet_frames(path, chunk_rows)
        return
    if fmt.kind == "jsonl":
        keys = _jsonl_keys(path, fmt)
        yield from _chunked(_jsonl_records(path, fmt, keys, report), _clean_names(keys),
                            chunk_rows)
        return
    with _table_rows(path, fmt) as (line_of, rows):
        header_line, header = _header(path, fmt, rows)
        columns = _clean_names(header)
        records = _data_records(path, fmt, rows, line_of, header_line, len(columns), report)
        yield from _chunked(records, columns, chunk_rows)


@contextlib.contextmanager
def _table_rows(path: Path, fmt: TableFormat
                ) -> Iterator[tuple[Callable[[], int], Iterator[list[object]]]]:
    """Raw rows of a CSV or a sheet, with a function telling the current line/row number."""
    if fmt.kind == "xlsx":
        workbook = _open_workbook(path)
        try:
            worksheet = workbook[_pick_sheet(path, workbook.sheetnames, fmt.sheet)]
            # Some writers store a wrong sheet size; read-only mode would stop at it.
            worksheet.reset_dimensions()
            numbered = _Numbered(worksheet.iter_rows(values_only=True))
            yield numbered.count, numbered
        finally:
            workbook.close()
        return
    csv.field_size_limit(max(csv.field_size_limit(), _MAX_FIELD))  # cells of megabytes
    try:
        handle = path.open(encoding=fmt.encoding, newline="")
    except OSError as err:
        raise _cannot_read(path, err) from err
    with handle:
        lines = _Lines(handle)
        reader = csv.reader(lines, delimiter=fmt.delimiter or ",")
        yield lambda: reader.line_num, _CsvRows(path, fmt, reader, lines)


class _Numbered:
    """Counts the rows taken from a sheet, which values-only iteration does not report."""

    def __init__(self, rows: Iterable[tuple[object, ...]]) -> None:
        self._rows = iter(rows)
        self.taken = 0

    def __iter__(self) -> _Numbered:
        return self

    def __next__(self) -> list[object]:
        row = list(next(self._rows))
        self.taken += 1
        return row

    def count(self) -> int:
        return self.taken


class _Lines:
    """Feeds a text file to csv.reader and notes when the file ran out.

    csv.reader quietly closes a quoted field at the end of the file, so a record that comes
    back after the file ran out means a quote was opened and never closed.
    """

    def __init__(self, handle: TextIO) -> None:
        self._lines = iter(handle)
        self.exhausted = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        try:
            return next(self._lines)
        except StopIteration:
            self.exhausted = True
            raise


class _CsvRows:
    """csv.reader records, with its failures turned into messages that name the line."""

    def __init__(self, path: Path, fmt: TableFormat, reader: Iterator[list[str]],
                 lines: _Lines) -> None:
        self._path, self._fmt, self._reader, self._lines = path, fmt, reader, lines

    def __iter__(self) -> _CsvRows:
        return self

    def __next__(self) -> list[object]:
        start = self._reader.line_num + 1
        name = self._path.name
        try:
            record = next(self._reader)
        except UnicodeDecodeError as err:
            other = "cp1252" if self._fmt.encoding in ("utf-8", "utf-8-sig") else "latin-1"
            raise InputError(
                f"{name}: text after line {start - 1} is not valid {self._fmt.encoding}; name"
                f" the file's encoding (e.g. --encoding {other})") from err
        except csv.Error as err:
            raise InputError(f"{name}: line {start}: {err}") from err
        if self._lines.exhausted:
            raise InputError(f"{name}: line {start}: a quote opened here is never closed")
        return list(record)


def _header(path: Path, fmt: TableFormat, rows: Iterator[list[object]]
            ) -> tuple[int, list[object]]:
    """The first non-blank row and its line (CSV) or row (sheet) number."""
    line = 0
    for line, row in enumerate(rows, start=1):  # noqa: B007 - line is used after the loop
        if not _is_blank(row):
            return line, row
    where = f"sheet {fmt.sheet!r} is empty" if fmt.kind == "xlsx" else "the file is empty"
    raise InputError(f"{path.name}: {where} (no rows)")


def _data_records(path: Path, fmt: TableFormat, rows: Iterator[list[object]],
                  line_of: Callable[[], int], header_line: int, width: int,
                  report: ReadReport) -> _Records:
    """Rows after the header, padded to the header's width and numbered from 1.

    A CSV row with more fields than the header cannot be mapped to columns, so it is
    skipped and its line recorded, unless the extra fields are empty (a trailing delimiter).
    Sheets often hold notes or formatting right of the table, so there extra cells are
    ignored instead.
    """
    number = 0
    while True:
        start = line_of() + 1
        try:
            row = next(rows)
        except StopIteration:
            return
        number += 1
        if _is_blank(row):
            continue
        cells = [_cell_text(value) for value in row]
        if fmt.kind == "csv" and any(cells[width:]):
            report.bad_lines.append(start)
            continue
        cells = cells[:width]
        cells.extend([""] * (width - len(cells)))
        yield number, cells
    del path, header_line  # numbering is relative to the header by construction


def _is_blank(row: list[object]) -> bool:
    return all(value is None or value == "" for value in row)
