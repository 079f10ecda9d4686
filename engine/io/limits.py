"""The caps that keep a hostile or broken file from taking the machine with it.

Every reader streams, so a big file costs time, not memory. What streaming alone does not
bound is one row, one cell or one compressed part: a CSV without a single newline, a quote
that never closes, a JSON Lines record nested 100,000 deep, a 40 KB .xlsx whose sheet
unpacks to gigabytes. Each cap here turns such a file into one `InputError` naming the
file and the limit, long before memory runs out. The values are far above anything a
spreadsheet of questions or documents holds, so no real table meets them.
"""

from __future__ import annotations

MAX_ROW_CHARS = 16_000_000
"""Characters in one record of a text table (a CSV row across its quoted newlines, or a
JSON Lines line). 16 million characters is a book of 5,000 pages in one row; a file that
does not close a row by then is broken (most often a quote that never closes) and would
otherwise be read whole into memory. The csv module holds a field as 4 bytes a character,
so the cap is what bounds its buffer: importing a 300 MB file whose quote never closes
peaks at 197 MiB with this cap, and peaked at 380 MiB with a 64M-character one
(`duplens import --no-encode`, tests/engine/io/test_hostile_cli.py)."""

MAX_COLUMNS = 16_384
"""Columns in one table: Excel's own limit (column XFD), so no workbook is ever refused.
Every row's other columns are stored with it, so a 100,000-column file would store a
megabyte of column names per row and freeze the import preview."""

CHUNK_CELLS = 2_000_000
"""Cells in one DataFrame chunk. Chunks are `chunk_rows` rows, but a 16,384-column table
would make a 20,000-row chunk hold 300 million cells, so wide tables get fewer rows per
chunk instead (122 rows at the widest)."""

CHUNK_CHARS = 32_000_000
"""Characters in one chunk: rows of documents rather than questions come in fewer rows per
chunk, so that 20,000 rows near the row cap never make one chunk of hundreds of GB. A chunk
of questions (about 80 characters a row) is far below it."""

MAX_SHEET_BYTES = 10**9
"""Unpacked bytes of one worksheet or of the shared strings of an .xlsx. openpyxl streams a
sheet but keeps every shared string in memory, and zipfile inflates a part up to the size
the zip directory declares, so checking the directory before opening bounds both. A 1 GB
sheet holds millions of rows; a zip bomb declares terabytes."""

MAX_PART_BYTES = 64 * 10**6
"""Unpacked bytes of any other XML part of an .xlsx (styles, workbook, relationships).
openpyxl parses these whole into element trees of about ten times their size; Excel's own
are a few hundred kilobytes even for big workbooks."""


def size_text(size: int) -> str:
    """A byte count as a person reads it: "3.2 GB", "640 MB", "12 KB"."""
    for unit, scale in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("KB", 10**3)):
        if size >= scale:
            value = size / scale
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    return f"{size} bytes"
