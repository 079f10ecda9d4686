"""Guess how a text table is encoded and delimited, from a sample of its first bytes.

Users bring files from Excel on Windows (cp1252, UTF-16 "Unicode text"), from Google Sheets
(UTF-8), from databases (TSV, "|") and from European locales (";" because "," is the decimal
mark). Asking them for the encoding and delimiter first would stop most of them, so we guess
from the first megabyte and let an explicit choice override the guess.
"""

from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

SAMPLE_BYTES = 1 << 20
"""How much of a file encoding detection looks at: enough to meet the odd accented
character that only turns up after the first rows, small enough to stay instant."""

DELIMITERS = ",\t;|"

_SNIFF_CHARS = 64 * 1024  # csv.Sniffer is slow on big texts; the first rows tell enough.

_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

# Signatures of files people pick by mistake (an .xlsx renamed to .csv, an export that is
# really a zip), so the error can say what the file is instead of just "binary".
_MAGIC = (
    (b"PK\x03\x04", "a ZIP archive, e.g. an .xlsx workbook"),
    (b"\xd0\xcf\x11\xe0", "an old Excel .xls workbook"),
    (b"PAR1", "a Parquet file"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"SQLite format 3\x00", "an SQLite database"),
)

# C0 and C1 control characters other than tab, newline, vertical tab, form feed and return.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_MAX_CONTROL_SHARE = 0.1

# The csv module's default field cap is 128 KiB; rows are bounded by `text_lines` instead
# (engine/io/limits.py), so this cap only has to stay out of the way. A C long caps it.
_MAX_FIELD = 2**31 - 1


@dataclass(frozen=True)
class FileSample:
    """The first bytes of a file, and whether they are all of it."""

    data: bytes
    complete: bool


def read_sample(path: Path, limit: int = SAMPLE_BYTES) -> FileSample:
    """Read up to `limit` bytes; OSError is left to the caller, which knows the file's name."""
    with path.open("rb") as handle:
        data = handle.read(limit + 1)
    return FileSample(data[:limit], complete=len(data) <= limit)


def detect_encoding(sample: FileSample) -> str:
    """Name the encoding the sample most likely uses.

    A BOM is the only certain sign, so it wins. UTF-16 without a BOM still shows as a NUL
    byte in every other position. UTF-8 is tried strictly because cp1252 and latin-1 decode
    almost anything; cp1252 comes before latin-1 because Windows writes its curly quotes and
    dashes in bytes latin-1 reads as control characters.
    """
    for bom, name in _BOMS:
        if sample.data.startswith(bom):
            return name
    utf16 = _utf16_without_bom(sample.data)
    if utf16 is not None:
        return utf16
    for name in ("utf-8", "cp1252"):
        try:
            decode_sample(sample, name)
        except UnicodeDecodeError:
            continue
        return name
    return "latin-1"


def _utf16_without_bom(data: bytes) -> str | None:
    """ASCII text in UTF-16 has a NUL high byte in one of each byte pair and none in the other."""
    head = data[:4096]
    pairs = len(head) // 2
    if pairs == 0:
        return None
    nul_even = head[0 : pairs * 2 : 2].count(0) / pairs
    nul_odd = head[1 : pairs * 2 : 2].count(0) / pairs
    if nul_odd > 0.3 and nul_even < 0.05:
        name = "utf-16-le"
    elif nul_even > 0.3 and nul_odd < 0.05:
        name = "utf-16-be"
    else:
        return None
    try:
        codecs.decode(head[: pairs * 2], name)
    except UnicodeDecodeError:
        return None
    return name


def decode_sample(sample: FileSample, encoding: str) -> str:
    """Decode strictly, tolerating a character cut in two where the sample stops.

    The incremental decoder holds back an incomplete trailing sequence instead of failing on
    it; when the sample is the whole file, such a tail is a real error and is reported.
    Raises UnicodeDecodeError, or LookupError for an unknown encoding name.
    """
    decoder = codecs.getincrementaldecoder(encoding)(errors="strict")
    return decoder.decode(sample.data, final=sample.complete)


def binary_kind(data: bytes) -> str | None:
    """Describe a well-known binary format the bytes start with, or None."""
    for magic, description in _MAGIC:
        if data.startswith(magic):
            return description
    return None


def looks_binary(text: str) -> bool:
    """Binary data decoded as latin-1 is full of control characters; text tables are not.

    A NUL is never in a text table; a few other control characters (a stray form feed or
    Ctrl-Z) are, so those only count when they are a sizeable share of the text.
    """
    if "\x00" in text:
        return True
    return len(_CONTROL.findall(text)) > _MAX_CONTROL_SHARE * max(len(text), 1)


def lift_field_limit() -> None:
    """Let the csv module read fields of any size, in sniffing and reading alike.

    The cap is process-wide: sniffing under the default while reading under a lifted one
    made a quote left open for more than 128 KiB of the sample look like "quotes are plain
    characters" in a fresh process only, and the file then imported line by line.
    """
    csv.field_size_limit(max(csv.field_size_limit(), _MAX_FIELD))


def detect_delimiter(text: str, default: str) -> str:
    """The one of the usual four delimiters that splits the first lines into a table.

    For each candidate the header must split into at least two columns; the winner is the
    one for which most lines have the header's width (read with and without quoting, the
    better of the two). csv.Sniffer alone was fooled by commas inside tab-separated
    questions. Ties go to `default` (tab for .tsv, else comma), then to more columns.
    """
    lift_field_limit()
    head = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS and "\n" in head:
        head = head[: head.rindex("\n")]
    best: tuple[float, bool, int] | None = None
    choice = default
    for delimiter in DELIMITERS:
        share, width = _consistency(head, delimiter)
        if width < 2:
            continue
        score = (share, delimiter == default, width)
        if best is None or score > best:
            best, choice = score, delimiter
    return choice


def _consistency(text: str, delimiter: str) -> tuple[float, int]:
    """(share of records as wide as the header, header width), the better quoting mode."""
    result = (0.0, 0)
    for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_NONE):
        try:
            widths = [len(r) for r in csv.reader(io.StringIO(text, newline=""),
                                                 delimiter=delimiter, quoting=quoting) if r]
        except csv.Error:
            continue
        if widths:
            share = sum(w == widths[0] for w in widths) / len(widths)
            result = max(result, (share, widths[0]))
    return result


def detect_quoting(text: str, delimiter: str, complete: bool = False) -> bool:
    """Whether '"' quotes fields, judged on the sample (`complete`: it is the whole file).

    Tab-separated exports often never quote, and then a text that starts with a quote
    ('"The Hobbit" is a novel') must stay as it is. Quoting is turned off only when a strict
    CSV reading stumbles over a quote that is not a field's opening or closing one, while
    splitting on the delimiter alone gives every line the header's width. A quote that is
    opened and never closed keeps quoting on, so the reader reports that line.
    """
    if '"' not in text:
        return True
    lift_field_limit()
    if not complete:
        text = text[: max(text.rfind("\n"), 0)]  # the sample may end inside a line
    try:
        for _ in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True):
            pass
        return True
    except csv.Error as err:
        if "unexpected end of data" in str(err):
            return True
    lines = [line for line in text.splitlines() if line.strip()]
    widths = {len(r) for r in csv.reader(lines, delimiter=delimiter, quoting=csv.QUOTE_NONE)}
    return len(widths) > 1
