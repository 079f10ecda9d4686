"""What every reader hands out: the format records, and cells and column names as clean str.

Shared by the readers of each file kind, so that importing, evaluation and previews never
care whether the user brought CSV, Excel, Parquet or JSON Lines.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import InputError
from engine.io.limits import MAX_COLUMNS

PathLike = str | os.PathLike[str]
Rows = Iterator[tuple[int, list[str]]]  # (line or row number, cells)

# A lone UTF-16 surrogate is a str Python can hold but UTF-8 (and so SQLite) cannot store.
# JSON's "\ud800" escapes make them; strict decoding keeps them out of CSV, Arrow validates
# Parquet strings as UTF-8, and XML refuses them in workbooks.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


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


def cannot_read(path: Path, err: OSError) -> InputError:
    """One message for missing, folder and forbidden, whatever library opened the file."""
    return InputError(f"{path.name}: cannot read ({err.strerror or err})")


def shown(name: str) -> str:
    """A name as it can stand in a one-line message: control characters (a header cell with
    a newline, say) escaped, so the message stays one line."""
    return name if name.isprintable() else name.encode("unicode_escape").decode("ascii")


def storable(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD, as a strict UTF-8 decoder would have
    done: the row is kept and the one unstorable character marked, instead of the import
    failing inside SQLite's UTF-8 conversion."""
    if text.isascii():  # the common case, and a fast test
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def cell_text(value: object) -> str:
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


def clean_names(path: Path, raw: Iterable[object]) -> list[str]:
    """Column names as str, stripped, never empty and unique, so they can key a mapping.

    Empty names become "column_<1-based position>"; repeats get ".1", ".2" like pandas. A
    byte order mark left by a wrongly named encoding is not part of the first name. More
    than `MAX_COLUMNS` columns is refused (see engine/io/limits.py).
    """
    names = [storable(cell_text(value)).strip().lstrip("\ufeff").strip()
             or f"column_{position}" for position, value in enumerate(raw, start=1)]
    if len(names) > MAX_COLUMNS:
        raise InputError(f"{path.name}: the table has {len(names):,} columns; Duplens reads "
                         f"tables of up to {MAX_COLUMNS:,} columns (Excel's limit)")
    # Suffixes below next_suffix[name] are all taken already (taken only grows), so the
    # search resumes there: 16,384 equal names cost 16,384 steps, not 134 million.
    next_suffix: dict[str, int] = {}
    unique: list[str] = []
    taken: set[str] = set()
    for name in names:
        candidate = name
        if candidate in taken:
            suffix = next_suffix.get(name, 1)
            while f"{name}.{suffix}" in taken:
                suffix += 1
            candidate = f"{name}.{suffix}"
            next_suffix[name] = suffix + 1
        taken.add(candidate)
        unique.append(candidate)
    return unique
