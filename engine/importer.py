"""Importing one spreadsheet into a project: stream, validate, store rows atomically.

The rows of one file go in as a single transaction: a file that turns out broken halfway
(or a cancel) leaves the project exactly as it was. Encoding is a separate, resumable job.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, exists, func, select

from engine.errors import InputError
from engine.io import (
    ReadReport,
    TableFormat,
    detect_format,
    iter_table,
    read_columns,
    require_columns,
)
from engine.progress import CancelToken, Progress, ProgressCallback, RateMeter, no_progress
from engine.store import change_counters
from engine.store.database import Store
from engine.store.items import NewRow, add_rows
from engine.store.schema import items, texts
from engine.store.sources import add_source, find_source, update_source
from engine.text import join_cells, norm_key

if TYPE_CHECKING:  # pragma: no cover - the readers import pandas when a file is read
    import pandas as pd


@dataclass
class ImportReport:
    """What an import did, for the CLI summary and the wizard's last page."""

    file_name: str
    source_id: int | None = None
    already_imported: bool = False
    rows_read: int = 0
    rows_imported: int = 0
    rows_empty: int = 0
    new_texts: int = 0
    bad_lines: list[int] = field(default_factory=list)
    format: TableFormat | None = None
    # Texts known before this import that had no live row and now have one again: an index
    # that marked them deleted must take them back. The content change count is bumped for them.
    revived_texts: list[int] = field(default_factory=list)
    content_change_count: int | None = None  # after the bump; None: nothing was revived
    # Verdicts given while checking this file that became verdicts on its rows now that
    # they are in (`engine.store.pending_verdicts`; set by `Rows.import_table`).
    verdicts_adopted: int = 0
    rows_change_count: int | None = None    # `change_counters.ROWS` after this import

    @property
    def exact_duplicates(self) -> int:
        """Imported rows whose text (normalised) was already known."""
        return self.rows_imported - self.new_texts


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mapping_key(fmt: TableFormat, text_columns: list[str], id_column: str | None) -> str:
    """Identifies which part of a file was imported and how (sheet, columns)."""
    key = json.dumps([fmt.kind, fmt.sheet, text_columns, id_column])
    return hashlib.sha256(key.encode()).hexdigest()


def import_table(store: Store, path: str | os.PathLike, text_columns: list[str], *,
                 id_column: str | None = None, sheet: str | None = None,
                 encoding: str | None = None, delimiter: str | None = None,
                 quoting: bool | None = None, progress: ProgressCallback = no_progress,
                 cancel: CancelToken | None = None, chunk_rows: int = 20_000) -> ImportReport:
    """Read `path` and store its rows; the whole file or nothing."""
    path = Path(path)
    fmt, columns = _readable_with_columns(path, text_columns, id_column, sheet=sheet,
                                          encoding=encoding, delimiter=delimiter,
                                          quoting=quoting)
    report = ImportReport(path.name, format=fmt)
    sha = file_sha256(path)
    mkey = mapping_key(fmt, text_columns, id_column)
    with store.read() as conn:
        existing = find_source(conn, sha, mkey)
    if existing is not None:
        report.source_id, report.already_imported = existing, True
        return report

    read = ReadReport()
    meter = RateMeter()
    with store.write() as conn:
        last_old_text = conn.execute(select(func.max(texts.c.id))).scalar() or 0
        source_id = add_source(
            conn, file_name=path.name, file_path=str(path.resolve()), sha256=sha,
            mapping_key=mkey, format=_format_dict(fmt), text_columns=text_columns,
            id_column=id_column, columns=columns,
        )
        for chunk in iter_table(path, fmt, chunk_rows=chunk_rows, report=read):
            if cancel is not None:
                cancel.raise_if_cancelled()
            rows, empty = _rows_from_chunk(chunk, text_columns, id_column)
            report.rows_empty += empty
            if rows:
                report.new_texts += add_rows(conn, source_id, rows)
                report.rows_imported += len(rows)
            report.rows_read = read.rows_read
            progress(Progress("reading", report.rows_read, 0, meter.rate(report.rows_read)))
        report.bad_lines = list(read.bad_lines)
        if report.rows_read == 0:
            raise InputError(f"{path.name}: the file has no data rows")
        if report.rows_imported == 0:
            raise _no_text(path, text_columns, report.rows_read)
        report.rows_change_count = change_counters.bump(conn, change_counters.ROWS)
        update_source(conn, source_id, rows_read=report.rows_read,
                      rows_imported=report.rows_imported, rows_empty=report.rows_empty,
                      bad_lines=report.bad_lines)
        if report.new_texts < report.rows_imported:  # some rows reuse known texts
            report.revived_texts = _revived_texts(conn, source_id, last_old_text)
            if report.revived_texts:
                report.content_change_count = change_counters.bump(
                    conn, change_counters.CONTENT)
    report.source_id = source_id
    return report


def check_table(path: str | os.PathLike, text_columns: list[str], *,
                id_column: str | None = None, sheet: str | None = None,
                encoding: str | None = None, delimiter: str | None = None,
                quoting: bool | None = None, progress: ProgressCallback = no_progress,
                cancel: CancelToken | None = None, chunk_rows: int = 20_000) -> None:
    """Refuse, without a project, a file `import_table` would refuse for what it holds: it
    cannot be read, lacks a column, has no data rows, or its text columns are blank on
    every row; the same one-line `InputError`. A project made for a file (the window's New
    project from spreadsheet) is made only after this passes, so such a file creates
    nothing and the project open before stays open. It reads only as far as the first row
    with text, so a usable file costs a chunk; a blank column is read to its end, as the
    import would."""
    path = Path(path)
    fmt, _columns = _readable_with_columns(path, text_columns, id_column, sheet=sheet,
                                           encoding=encoding, delimiter=delimiter,
                                           quoting=quoting)
    read = ReadReport()
    meter = RateMeter()
    for chunk in iter_table(path, fmt, chunk_rows=chunk_rows, report=read):
        if cancel is not None:
            cancel.raise_if_cancelled()
        if any(join_cells(cells) for cells in chunk[text_columns].to_numpy().tolist()):
            return
        progress(Progress("reading", read.rows_read, 0, meter.rate(read.rows_read)))
    if read.rows_read == 0:
        raise InputError(f"{path.name}: the file has no data rows")
    raise _no_text(path, text_columns, read.rows_read)


def _readable_with_columns(path: Path, text_columns: list[str], id_column: str | None, *,
                           sheet: str | None, encoding: str | None, delimiter: str | None,
                           quoting: bool | None) -> tuple[TableFormat, list[str]]:
    """The checks every import starts with (a text column chosen, the file readable, the
    columns there): its format and columns, or the user's one-line error."""
    if not text_columns:
        raise InputError(f"{path.name}: choose at least one text column")
    fmt = detect_format(path, sheet=sheet, encoding=encoding, delimiter=delimiter,
                        quoting=quoting)
    columns = read_columns(path, fmt)
    wanted = list(dict.fromkeys([*text_columns, *([id_column] if id_column else [])]))
    require_columns(path, columns, wanted)
    return fmt, columns


def _no_text(path: Path, text_columns: list[str], rows: int) -> InputError:
    """The error for text columns that are blank on every row. Stored, such a file would be
    a project (or an import) with nothing to search and no word why; it is nearly always the
    wrong column chosen, so it is refused like a missing column, and raised inside the
    import's transaction it leaves the project as it was."""
    names = ", ".join(f'"{c}"' for c in text_columns)
    which = f"column {names} has" if len(text_columns) == 1 else f"columns {names} have"
    blank = f"its {rows:,} rows are all blank" if rows > 1 else "its one row is blank"
    return InputError(f"{path.name}: {which} no text ({blank}); choose the column that "
                      f"holds the text")


def _revived_texts(conn: Connection, source_id: int, last_old_text: int) -> list[int]:
    """Texts that existed before this import (ids up to `last_old_text`; texts are never
    deleted, so new ones get higher ids) whose only live rows are this source's."""
    mine = items.alias("mine")
    other = items.alias("other")
    other_live = exists().where(other.c.text_id == mine.c.text_id,
                                other.c.source_id != source_id, ~other.c.deleted)
    return list(conn.execute(
        select(mine.c.text_id).distinct()
        .where(mine.c.source_id == source_id, mine.c.text_id <= last_old_text, ~other_live)
        .order_by(mine.c.text_id)
    ).scalars())


def _rows_from_chunk(chunk: pd.DataFrame, text_columns: list[str], id_column: str | None
                     ) -> tuple[list[NewRow], int]:
    extra_columns = [c for c in chunk.columns if c != id_column]
    rows: list[NewRow] = []
    empty = 0
    text_values = chunk[text_columns].to_numpy().tolist()
    ids = chunk[id_column].tolist() if id_column else [None] * len(chunk)
    extras = chunk[extra_columns].to_dict("records")
    for row_number, cells, ext_id, extra in zip(chunk.index.tolist(), text_values, ids, extras,
                                                strict=True):
        text = join_cells(cells)
        if not text:
            empty += 1
            continue
        rows.append(NewRow(int(row_number), ext_id or None, text, norm_key(text), extra))
    return rows, empty


def _format_dict(fmt: TableFormat) -> dict:
    return {"kind": fmt.kind, "encoding": fmt.encoding, "delimiter": fmt.delimiter,
            "sheet": fmt.sheet, "quoting": fmt.quoting}

