"""Write results to CSV or Excel without handing the reader a formula to run.

Exported cells hold user text, and a cell starting with "=" (or "+", "-", "@") is run as a
formula when the export is opened in a spreadsheet program: CSV/formula injection. Every
string cell therefore gets a leading apostrophe, the spreadsheet convention for "this is
text". Exports replace the target in one step, so a failure never leaves half a file where
a good one may have been.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import DiskFull, DuplensError, InputError

if TYPE_CHECKING:  # pragma: no cover - pandas and openpyxl are imported when a file is written
    import pandas as pd

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# The most characters an Excel cell holds. openpyxl writes longer text cut to this without a
# word, so a document of some 5,000 words would lose its end in an .xlsx export.
EXCEL_CELL_CHARS = 32_767

PathLike = str | os.PathLike[str]


def neutralise_cell(value: object) -> object:
    """Prefix text a spreadsheet would take for a formula with "'"; leave the rest alone."""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def write_rows(path: PathLike, header: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    """Stream `rows` to .csv or .xlsx (by extension), one row at a time; returns rows written.

    Nothing but the row in hand is held: the CSV goes through the csv module (excel dialect,
    so embedded newlines, quotes and separators are quoted and read back exactly), the XLSX
    through openpyxl's write-only sheet. Same BOM, neutralising and atomic replace as
    `export_table`.
    """
    path = Path(path)
    writers = {".csv": _stream_csv, ".xlsx": _stream_xlsx}
    writer = writers.get(path.suffix.lower())
    if writer is None:
        raise InputError(f"{path.name}: cannot export to this file type; use .csv or .xlsx")
    try:
        return _atomically(path, lambda temp: writer(temp, header, rows))
    except _CellTooLong as too_long:
        raise InputError(f"{path.name}: {too_long}") from None


def write_csv_pages(path: PathLike, header: Sequence[str],
                    pages: Iterable[tuple[bytes | memoryview, int]]) -> int:
    """Write a CSV whose data lines come already encoded: each page is (its bytes, its row
    count), made by `engine.io.csv_columns` to the csv module's rules. The header, BOM and
    atomic replace are `write_rows`'s; returns rows written."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        raise InputError(f"{path.name}: pages of CSV lines go to a .csv file")

    def write(temp: Path) -> int:
        written = 0
        with temp.open("wb") as fh:
            fh.write(_csv_header(header))
            for data, rows in pages:
                fh.write(data)
                written += rows
        return written

    return _atomically(path, write)


def _atomically(path: Path, write: Callable[[Path], int]) -> int:
    """`write` into a hidden file beside `path`, then replace `path` with it: a reader never
    sees half a file, and a failed write (a full disk) leaves the old one whole and no
    temporary behind. The hidden file has a unique name in the same folder, so os.replace
    is a rename on one file system, and `write` creates it, so it gets the usual permissions
    rather than a temporary file's 0600. Returns what `write` returns (rows written)."""
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        written = write(temp)
        os.replace(temp, path)
    except OSError as err:
        raise _write_error(path, err) from err
    finally:
        temp.unlink(missing_ok=True)
    return written


def _csv_header(header: Sequence[str]) -> bytes:
    """The BOM and the header line, neutralised, exactly as `_stream_csv` starts a file."""
    out = io.StringIO()
    csv.writer(out).writerow([neutralise_cell(str(name)) for name in header])
    return out.getvalue().encode("utf-8-sig")


def _stream_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    written = 0
    with path.open("w", encoding="utf-8-sig", newline="") as fh:
        out = csv.writer(fh)
        out.writerow([neutralise_cell(str(name)) for name in header])
        for row in rows:
            out.writerow([neutralise_cell(value) for value in row])
            written += 1
    return written


def _stream_xlsx(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> int:
    import openpyxl

    xlsx_value = _xlsx_values()
    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet()
    sheet.append([xlsx_value(str(name)) for name in header])
    written = 0
    try:
        for row in rows:
            sheet.append(_whole([xlsx_value(value) for value in row], header, written + 1))
            written += 1
    except _CellTooLong:
        sheet.close()   # its rows' writer ends now, not when collected, on a deleted file
        raise
    workbook.save(path)
    return written


def export_table(df: pd.DataFrame, path: PathLike) -> None:
    """Write `df` (without its index) to .csv or .xlsx, chosen by the extension.

    CSV is UTF-8 with a BOM, without which Excel reads it as the local ANSI code page.
    """
    path = Path(path)
    writers: dict[str, Callable[[pd.DataFrame, Path], None]] = {
        ".csv": _write_csv, ".xlsx": _write_xlsx,
    }
    writer = writers.get(path.suffix.lower())
    if writer is None:
        raise InputError(f"{path.name}: cannot export to this file type; use .csv or .xlsx")
    try:
        _atomically(path, lambda temp: writer(df, temp) or len(df))
    except _CellTooLong as too_long:
        raise InputError(f"{path.name}: {too_long}") from None


def _write_csv(df: pd.DataFrame, path: Path) -> None:
    safe = df.map(neutralise_cell)
    safe.columns = [neutralise_cell(str(name)) for name in df.columns]
    safe.to_csv(path, index=False, encoding="utf-8-sig")


def _write_xlsx(df: pd.DataFrame, path: Path) -> None:
    """Write-only mode streams rows to disk instead of building every cell in memory."""
    import openpyxl

    xlsx_value = _xlsx_values()
    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet()
    sheet.append([xlsx_value(str(name)) for name in df.columns])
    try:
        for number, row in enumerate(df.itertuples(index=False, name=None), start=1):
            sheet.append(_whole([xlsx_value(value) for value in row], list(df.columns),
                                number))
    except _CellTooLong:
        sheet.close()   # its rows' writer ends now, not when collected, on a deleted file
        raise
    workbook.save(path)


def _whole(values: list[object], header: Sequence[object], number: int) -> list[object]:
    """`values`, refused with one line where a text is longer than an Excel cell holds:
    Excel (and openpyxl, writing it) would keep only its first `EXCEL_CELL_CHARS`
    characters. A CSV keeps it whole, so the line says to export to one."""
    for name, value in zip(header, values, strict=False):
        if isinstance(value, str) and len(value) > EXCEL_CELL_CHARS:
            raise _CellTooLong(f"row {number}'s {name} holds {len(value):,} characters, more "
                               f"than an Excel cell keeps ({EXCEL_CELL_CHARS:,}); export to "
                               ".csv to keep every text whole")
    return values


class _CellTooLong(ValueError):
    """A text an .xlsx cell would cut (`_whole`); the caller names the file."""


def _xlsx_values() -> Callable[[object], object]:
    """The cell converter for openpyxl; pandas and openpyxl are imported here, when a
    workbook is written, not whenever the engine is (`duplens info` needs neither)."""
    import pandas as pd
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    def xlsx_value(value: object) -> object:
        """A value openpyxl can store: empty for missing, text neutralised and without the
        control characters XML cannot hold (openpyxl would refuse the whole file)."""
        if isinstance(value, str):
            return neutralise_cell(ILLEGAL_CHARACTERS_RE.sub("", value))
        if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
            return None
        return value

    return xlsx_value


def _write_error(path: Path, err: OSError) -> DuplensError:
    """A full disk says so and names the file (`DiskFull`); any other refusal (a folder
    that does not exist, no permission) is the user's one-line `InputError`."""
    if err.errno == errno.ENOSPC:
        return DiskFull(path.name)
    return InputError(f"{path.name}: cannot write ({err.strerror or err})")
