"""Delimited text (CSV, TSV, semicolon- or pipe-separated): check, sniff and read records.

CSV is parsed with the csv module rather than pandas.read_csv: pandas silently drops the
extra fields of every row when the first data row is wider than the header, counts lines
without the newlines inside quoted fields, and reports skipped rows only through warnings,
which cannot be captured safely while other threads run. The csv module gives exact line
numbers and a per-row decision, and streams just as well.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from engine.errors import InputError
from engine.io import sniff
from engine.io.records import Rows, cannot_read
from engine.io.text_lines import Lines

# A delimiter the csv module would take but that cannot split a table: quote and newlines.
_NOT_DELIMITERS = {'"': "the quote character", "\n": "a newline", "\r": "a newline"}


def decoded_sample(path: Path, encoding: str | None) -> tuple[str, str, bool]:
    """The encoding, the decoded sample and whether it is the whole file, after ruling out
    binary and empty files."""
    try:
        sample = sniff.read_sample(path)
    except OSError as err:
        raise cannot_read(path, err) from err
    known = sniff.binary_kind(sample.data)
    if known is not None:
        raise InputError(f"{path.name}: is not a text table (it looks like {known})")
    if encoding is not None:
        _require_text_encoding(path, encoding)
    encoding = encoding or sniff.detect_encoding(sample)
    try:
        text = sniff.decode_sample(sample, encoding)
    except UnicodeError as err:  # punycode and idna raise plain UnicodeError
        raise InputError(f"{path.name}: is not valid {encoding} text") from err
    if sniff.looks_binary(text):
        raise InputError(f"{path.name}: is not a text table (it contains binary data)")
    if not text.strip():
        raise InputError(f"{path.name}: the file is empty (no rows)")
    return encoding, text, sample.complete


def _require_text_encoding(path: Path, encoding: str) -> None:
    """Refuse names Python knows but that are not text encodings (hex, rot13, zlib...):
    their decoders take or give the wrong types and would fail with a TypeError."""
    try:
        io.TextIOWrapper(io.BytesIO(), encoding=encoding)  # the check open() makes
    except LookupError as err:
        raise InputError(f"{path.name}: unknown encoding {encoding!r}") from err


def choose_delimiter(path: Path, text: str, delimiter: str | None) -> str:
    """The user's delimiter, checked, or the one the sample shows (tab first for .tsv)."""
    if delimiter is None:
        return sniff.detect_delimiter(text, "\t" if path.suffix.lower() == ".tsv" else ",")
    if len(delimiter) != 1:
        raise InputError(f"{path.name}: the delimiter must be one character, not {delimiter!r}")
    if delimiter in _NOT_DELIMITERS:
        raise InputError(f"{path.name}: the delimiter cannot be {_NOT_DELIMITERS[delimiter]}")
    return delimiter


def csv_rows(path: Path, lines: Lines, delimiter: str, quoting: bool = True) -> Rows:
    """csv records with the line each starts on; an unclosed quote is an error, not a row."""
    sniff.lift_field_limit()
    reader = csv.reader(lines, delimiter=delimiter,
                        quoting=csv.QUOTE_MINIMAL if quoting else csv.QUOTE_NONE)
    while True:
        start = lines.count + 1
        lines.new_record()
        try:
            record = next(reader, None)
        except csv.Error as err:  # the non-strict reader is lenient; this is what is left
            raise InputError(f"{path.name}: line {start}: cannot be read as CSV ({err})") from err
        if record is None:
            return
        if lines.exhausted:
            raise InputError(f"{path.name}: line {start}: a quote opened here is never closed")
        yield start, record
