"""Excel workbooks (.xlsx, .xlsm): check the zip, open it read-only and stream a sheet's rows.

An .xlsx is a zip of XML parts, and a 40 KB one can declare a sheet of terabytes (a zip
bomb). zipfile inflates a part only up to the size the zip directory declares, so that
directory is checked first (see engine/io/limits.py); openpyxl then streams the sheet. What
openpyxl raises on a damaged part while streaming becomes one `InputError` too.
"""

from __future__ import annotations

import contextlib
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from engine.errors import InputError
from engine.io.limits import MAX_PART_BYTES, MAX_SHEET_BYTES, size_text
from engine.io.records import Rows, TableFormat, cannot_read, cell_text, shown

if TYPE_CHECKING:  # pragma: no cover - openpyxl is imported when a workbook is opened
    import openpyxl

EXCEL_MAX_ROWS = 1_048_576
"""Excel's last row. openpyxl fills a gap in row numbers with empty rows, so a sheet whose
XML numbers a row 2,000,000,000 would otherwise stream empty rows for an hour."""

# What openpyxl and zipfile raise on a part that is not what it claims: XML errors are
# SyntaxError subclasses; bad numbers, dates and cell references are ValueError/KeyError/
# OverflowError; a damaged deflate stream is zlib.error or BadZipFile (CRC); and openpyxl's
# InvalidFileException (`_broken`).
_BROKEN = (zipfile.BadZipFile, zlib.error, SyntaxError, ValueError, KeyError, IndexError,
           TypeError, OverflowError, EOFError)
_READ_COMPRESSION = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)  # what Excel writes


def _broken() -> tuple[type[BaseException], ...]:
    """`_BROKEN` and openpyxl's own error; openpyxl is imported only once a workbook is
    read (importing it costs a tenth of a second every command would pay)."""
    from openpyxl.utils.exceptions import InvalidFileException

    return (*_BROKEN, InvalidFileException)


@contextlib.contextmanager
def sheet_rows(path: Path, fmt: TableFormat) -> Iterator[Rows]:
    """The rows of the sheet `fmt` names (or the first), numbered from 1, as str cells."""
    workbook = open_workbook(path)
    try:
        worksheet = workbook[pick_sheet(path, worksheet_titles(workbook), fmt.sheet)]
        yield _rows(path, worksheet)
    finally:
        workbook.close()


def _rows(path: Path, worksheet) -> Rows:
    try:
        worksheet.reset_dimensions()  # some writers store a wrong size, which would cut rows
        rows = enumerate(worksheet.iter_rows(values_only=True), start=1)
        for number, row in rows:
            if number > EXCEL_MAX_ROWS:
                raise InputError(f"{path.name}: the sheet numbers rows past {EXCEL_MAX_ROWS:,}"
                                 f", Excel's last row; it is damaged")
            yield number, [cell_text(value) for value in row]
    except OSError as err:
        raise cannot_read(path, err) from err
    except _broken() as err:
        raise _damaged(path, err) from err


def open_workbook(path: Path) -> openpyxl.Workbook:
    """The workbook in read-only mode, after checking what its parts unpack to."""
    import openpyxl

    check_unpacked_sizes(path)
    try:
        return openpyxl.load_workbook(path, read_only=True, data_only=True)
    except OSError as err:
        raise cannot_read(path, err) from err
    except _broken() as err:
        raise InputError(f"{path.name}: is not a valid .xlsx workbook") from err


def check_unpacked_sizes(path: Path) -> None:
    """Refuse a workbook whose XML parts unpack to more than Duplens reads, before any of
    it is inflated: the sizes come from the zip directory, which zipfile then holds to."""
    try:
        with zipfile.ZipFile(path) as archive:
            parts = archive.infolist()
    except OSError as err:
        raise cannot_read(path, err) from err
    except (zipfile.BadZipFile, ValueError, EOFError) as err:
        raise InputError(f"{path.name}: is not a valid .xlsx workbook") from err
    for part in parts:
        name = part.filename
        if not name.endswith((".xml", ".rels")):
            continue  # pictures, VBA, printer settings: openpyxl leaves them packed
        if part.compress_type not in _READ_COMPRESSION:
            raise InputError(f"{path.name}: part {name} is packed with a compression Excel"
                             f" does not use; save the workbook again from Excel")
        sheet = name.startswith("xl/worksheets/")
        strings = name == "xl/sharedStrings.xml"
        cap = MAX_SHEET_BYTES if sheet or strings else MAX_PART_BYTES
        if part.file_size > cap:
            what = "a sheet" if sheet else "the shared strings" if strings else f"part {name}"
            kind = "sheets" if sheet or strings else "workbook parts"
            raise InputError(f"{path.name}: {what} expands to {size_text(part.file_size)} when"
                             f" unpacked; Duplens reads {kind} up to {size_text(cap)}")


def worksheet_titles(workbook: openpyxl.Workbook) -> list[str]:
    return [sheet.title for sheet in workbook.worksheets]  # chart sheets hold no table


def sheet_names(path: Path) -> list[str]:
    workbook = open_workbook(path)
    try:
        return worksheet_titles(workbook)
    finally:
        workbook.close()


def pick_sheet(path: Path, names: list[str], sheet: str | None) -> str:
    if not names:
        raise InputError(f"{path.name}: the workbook has no worksheets")
    if sheet is None:
        return names[0]
    if sheet not in names:
        raise InputError(f'{path.name}: no sheet "{shown(sheet)}"; sheets are: '
                         f'{", ".join(map(shown, names))}')
    return sheet


def _damaged(path: Path, err: Exception) -> InputError:
    """One line for a part openpyxl could open but not read through."""
    reason = str(err).splitlines()[0] if str(err) else type(err).__name__
    return InputError(f"{path.name}: the sheet is damaged and cannot be read ({reason[:120]})")
