"""Open a table file of any supported kind and stream it as text-only DataFrames.

Every reader hands out the same shape (str cells, clean unique column names, an index of
stable 1-based data row numbers) so importing, evaluation and previews never care whether
the user brought CSV, Excel, Parquet or JSON Lines. Files may be far bigger than memory, so
nothing here reads a whole table at once, and every problem a user can fix is raised as a
one-line `InputError` naming the file, never as a parser's traceback.

CSV is parsed with the csv module rather than pandas.read_csv: pandas silently drops the
extra fields of every row when the first data row is wider than the header, counts lines
without the newlines inside quoted fields, and reports skipped rows only through warnings,
which cannot be captured safely while other threads run. The csv module gives exact line
numbers and a per-row decision, and streams just as well.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import json
import math
import os
import zipfile
from collections.abc import Iterable, Iterator
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
_JSONL_KEY_SCAN = 1000  # JSON Lines records whose keys make up the columns
_MAX_FIELD = 2**31 - 1  # the csv module's default cap is 128 KiB; a C long caps this one

PathLike = str | os.PathLike[str]
_Rows = Iterator[tuple[int, list[str]]]  # (line or row number, cells)


@dataclass(frozen=True)
class TableFormat:
    """How to read a file: what detection found, or what the user insisted on."""

    kind: str  # "csv" (any delimiter), "xlsx", "parquet", "jsonl"
    encoding: str | None = None  # text formats only
    delimiter: str | None = None  # csv only
    sheet: str | None = None  # xlsx only: the sheet actually used
    quoting: bool | None = None  # csv only: False when '"' is an ordinary character


@dataclass
class TablePreview:
    """The first rows of a file, for the import wizard to show before anything is stored."""

    format: TableFormat
    columns: list[str]
    rows: list[list[str]]  # first data rows as strings ("" for empty)
    sheets: list[str]  # xlsx sheet names, [] otherwise


@dataclass
class ReadReport:
    """What streaming a table skipped, so the user learns which lines did not make it."""

    rows_read: int = 0  # data rows yielded
    bad_lines: list[int] = field(default_factory=list)  # 1-based lines of skipped rows


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
        return TableFormat("xlsx", sheet=_pick_sheet(path, _sheet_names(path), sheet))
    if kind == "parquet":
        with _open_parquet(path):
            return TableFormat("parquet")
    encoding, text, complete = _decoded_sample(path, encoding)
    if kind == "jsonl":
        return TableFormat("jsonl", encoding=encoding)
    delimiter = _delimiter(path, text, delimiter)
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
    sheets = _sheet_names(path) if fmt.kind == "xlsx" else []
    return TablePreview(fmt, list(first.columns), first.to_numpy().tolist(), sheets)


def read_columns(path: PathLike, fmt: TableFormat) -> list[str]:
    """The cleaned column names, reading only the header (or the schema)."""
    path = Path(path)
    fmt = _complete(path, fmt)
    if fmt.kind == "parquet":
        with _open_parquet(path) as parquet:
            return _clean_names(parquet.schema_arrow.names)
    if fmt.kind == "jsonl":
        return _clean_names(_jsonl_keys(path, fmt))
    with _table_rows(path, fmt) as rows:
        return _clean_names(_header(path, fmt, rows))


def iter_table(path: PathLike, fmt: TableFormat, *, chunk_rows: int = 20_000,
               report: ReadReport | None = None) -> Iterator[pd.DataFrame]:
    """Stream the table as DataFrames of at most `chunk_rows` rows of str cells.

    The index is the 1-based data row number (the first record after the header is 1; for
    JSON Lines, the line number). It counts blank and skipped rows too, so a row keeps its
    number however the file is chunked. Rows whose cells are all empty are not yielded.
    A table without a single data row raises InputError rather than yielding nothing, so an
    import cannot quietly succeed with nothing in it.
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
    names = ", ".join(f'"{name}"' for name in missing)
    have = ", ".join(available) if available else "(none)"
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
        raise _cannot_read(path, err) from err


def _cannot_read(path: Path, err: OSError) -> InputError:
    return InputError(f"{path.name}: cannot read ({err.strerror or err})")


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


def _decoded_sample(path: Path, encoding: str | None) -> tuple[str, str, bool]:
    """The encoding, the decoded sample and whether it is the whole file, after ruling out
    binary and empty files."""
    try:
        sample = sniff.read_sample(path)
    except OSError as err:
        raise _cannot_read(path, err) from err
    known = sniff.binary_kind(sample.data)
    if known is not None:
        raise InputError(f"{path.name}: is not a text table (it looks like {known})")
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
    return encoding, text, sample.complete


def _delimiter(path: Path, text: str, delimiter: str | None) -> str:
    if delimiter is None:
        return sniff.detect_delimiter(text, "\t" if path.suffix.lower() == ".tsv" else ",")
    if len(delimiter) != 1:
        raise InputError(f"{path.name}: the delimiter must be one character, not {delimiter!r}")
    return delimiter


# -- records of every kind ------------------------------------------------------------------


def _frames(path: Path, fmt: TableFormat, chunk_rows: int,
            report: ReadReport) -> Iterator[pd.DataFrame]:
    """Chunks of any kind of file, opening it once."""
    if fmt.kind == "parquet":
        with _open_parquet(path) as parquet:
            columns = _clean_names(parquet.schema_arrow.names)
            yield from _chunked(_parquet_records(path, parquet, chunk_rows), columns, chunk_rows)
    elif fmt.kind == "jsonl":
        keys = _jsonl_keys(path, fmt)
        yield from _chunked(_jsonl_records(path, fmt, keys, report), _clean_names(keys),
                            chunk_rows)
    else:
        with _table_rows(path, fmt) as rows:
            columns = _clean_names(_header(path, fmt, rows))
            yield from _chunked(_fitted(fmt, rows, len(columns), report), columns, chunk_rows)


def _chunked(records: _Rows, columns: list[str], chunk_rows: int) -> Iterator[pd.DataFrame]:
    """Gather numbered rows into DataFrames, leaving out rows with nothing in them."""
    numbers: list[int] = []
    rows: list[list[str]] = []
    for number, cells in records:
        if not any(cells):
            continue
        numbers.append(number)
        rows.append(cells)
        if len(rows) == chunk_rows:
            yield _frame(rows, numbers, columns)
            numbers, rows = [], []
    if rows:
        yield _frame(rows, numbers, columns)


def _frame(rows: list[list[str]], numbers: list[int], columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=columns, index=numbers, dtype=str)


def _cell_text(value: object) -> str:
    """A cell as the text a person sees: nothing for empty, 3 rather than 3.0."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer():
            return str(int(value))
    return str(value)


def _clean_names(raw: Iterable[object]) -> list[str]:
    """Column names as str, stripped, never empty and unique, so they can key a mapping.

    Empty names become "column_<1-based position>"; repeats get ".1", ".2" like pandas.
    """
    names = [_cell_text(value).strip() or f"column_{position}"
             for position, value in enumerate(raw, start=1)]
    seen: set[str] = set()
    unique: list[str] = []
    for name in names:
        candidate, suffix = name, 0
        while candidate in seen:
            suffix += 1
            candidate = f"{name}.{suffix}"
        seen.add(candidate)
        unique.append(candidate)
    return unique


# -- CSV and sheets -------------------------------------------------------------------------


@contextlib.contextmanager
def _table_rows(path: Path, fmt: TableFormat) -> Iterator[_Rows]:
    """Raw rows of a CSV file or a sheet, numbered by line (CSV) or sheet row."""
    if fmt.kind == "xlsx":
        with _sheet_rows(path, fmt) as rows:
            yield rows
    else:
        with _text_lines(path, fmt) as lines:
            yield _csv_rows(path, lines, fmt.delimiter or ",", fmt.quoting is not False)


def _header(path: Path, fmt: TableFormat, rows: _Rows) -> list[str]:
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


def _fitted(fmt: TableFormat, rows: _Rows, width: int, report: ReadReport) -> _Rows:
    """Rows after the header, numbered from 1 and fitted to the header's width.

    A CSV row with more fields than the header cannot be matched to columns, so it is
    skipped and its line recorded, unless the extra fields are empty (a trailing delimiter).
    Sheets often hold notes right of the table, so there extra cells are dropped instead.
    Shorter rows are padded with "".
    """
    for number, (line, cells) in enumerate(rows, start=1):
        if fmt.kind == "csv" and any(cells[width:]):
            report.bad_lines.append(line)
            continue
        yield number, cells[:width] + [""] * (width - len(cells))


@contextlib.contextmanager
def _text_lines(path: Path, fmt: TableFormat) -> Iterator[_Lines]:
    try:
        handle = path.open(encoding=fmt.encoding, newline="")
    except OSError as err:
        raise _cannot_read(path, err) from err
    with handle:
        yield _Lines(path, fmt, handle)


class _Lines:
    """Lines of a text file, counted, with decoding errors reported by line.

    It also notes when the file ran out: csv.reader quietly closes a quoted field at the end
    of the file, so a record that comes back after that means a quote was never closed.
    """

    def __init__(self, path: Path, fmt: TableFormat, handle: TextIO) -> None:
        self._path, self._encoding, self._lines = path, fmt.encoding, iter(handle)
        self.count = 0
        self.exhausted = False

    def __iter__(self) -> _Lines:
        return self

    def __next__(self) -> str:
        try:
            line = next(self._lines)
        except StopIteration:
            self.exhausted = True
            raise
        except UnicodeDecodeError as err:
            other = "latin-1" if self._encoding == "cp1252" else "cp1252"
            raise InputError(
                f"{self._path.name}: text after line {self.count} is not valid"
                f" {self._encoding}; name the file's encoding (e.g. --encoding {other})"
            ) from err
        self.count += 1
        return line


def _csv_rows(path: Path, lines: _Lines, delimiter: str, quoting: bool = True) -> _Rows:
    """csv records with the line each starts on; an unclosed quote is an error, not a row."""
    csv.field_size_limit(max(csv.field_size_limit(), _MAX_FIELD))  # cells of megabytes
    reader = csv.reader(lines, delimiter=delimiter,
                        quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE)
    while True:
        start = lines.count + 1
        record = next(reader, None)
        if record is None:
            return
        if lines.exhausted:
            raise InputError(f"{path.name}: line {start}: a quote opened here is never closed")
        yield start, record


@contextlib.contextmanager
def _sheet_rows(path: Path, fmt: TableFormat) -> Iterator[_Rows]:
    workbook = _open_workbook(path)
    try:
        worksheet = workbook[_pick_sheet(path, _worksheet_titles(workbook), fmt.sheet)]
        worksheet.reset_dimensions()  # some writers store a wrong size, which would cut rows
        rows = worksheet.iter_rows(values_only=True)
        yield ((number, [_cell_text(value) for value in row])
               for number, row in enumerate(rows, start=1))
    finally:
        workbook.close()


def _open_workbook(path: Path) -> openpyxl.Workbook:
    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except OSError as err:
        raise _cannot_read(path, err) from err
    except (zipfile.BadZipFile, InvalidFileException, KeyError, ValueError, SyntaxError) as err:
        raise InputError(f"{path.name}: is not a valid .xlsx workbook") from err


def _worksheet_titles(workbook: openpyxl.Workbook) -> list[str]:
    return [sheet.title for sheet in workbook.worksheets]  # chart sheets hold no table


def _sheet_names(path: Path) -> list[str]:
    workbook = _open_workbook(path)
    try:
        return _worksheet_titles(workbook)
    finally:
        workbook.close()


def _pick_sheet(path: Path, names: list[str], sheet: str | None) -> str:
    if not names:
        raise InputError(f"{path.name}: the workbook has no worksheets")
    if sheet is None:
        return names[0]
    if sheet not in names:
        raise InputError(f'{path.name}: no sheet "{sheet}"; sheets are: {", ".join(names)}')
    return sheet


# -- Parquet and JSON Lines -----------------------------------------------------------------


def _open_parquet(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as err:
        raise _bad_parquet(path, err) from err


def _bad_parquet(path: Path, err: Exception) -> InputError:
    if isinstance(err, OSError) and not isinstance(err, pa.ArrowException):
        return _cannot_read(path, err)
    return InputError(f"{path.name}: is not a valid Parquet file")


def _parquet_records(path: Path, parquet: pq.ParquetFile, chunk_rows: int) -> _Rows:
    """Rows of a Parquet file, a record batch at a time, numbered from 1."""
    batches = parquet.iter_batches(batch_size=chunk_rows)
    number = 0
    while True:
        try:
            batch = next(batches, None)
        except (pa.ArrowException, OSError) as err:
            raise _bad_parquet(path, err) from err
        if batch is None:
            return
        columns = [[_cell_text(v) for v in column.to_pylist()] for column in batch.columns]
        for cells in zip(*columns, strict=True):
            number += 1
            yield number, list(cells)


def _json_objects(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, object] | None]]:
    """Each non-blank line's number and its JSON object, or None when it holds none."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            value = None
        yield number, value if isinstance(value, dict) else None


def _jsonl_keys(path: Path, fmt: TableFormat) -> list[str]:
    """Keys of the first records, in order of appearance; later new keys are ignored, as
    the columns must be known before the first chunk is handed out."""
    keys: dict[str, None] = {}
    with _text_lines(path, fmt) as lines:
        for _, record in itertools.islice(_json_objects(lines), _JSONL_KEY_SCAN):
            keys.update(dict.fromkeys(record or {}))
    if not keys:
        raise InputError(f"{path.name}: is not JSON Lines (no line holds a JSON object)")
    return list(keys)


def _jsonl_records(path: Path, fmt: TableFormat, keys: list[str], report: ReadReport) -> _Rows:
    """Records as rows numbered by line; a line that is not a JSON object is skipped."""
    with _text_lines(path, fmt) as lines:
        for number, record in _json_objects(lines):
            if record is None:
                report.bad_lines.append(number)
                continue
            yield number, [_json_text(record.get(key)) for key in keys]


def _json_text(value: object) -> str:
    """Strings as they are; numbers, booleans and nested values as JSON text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
