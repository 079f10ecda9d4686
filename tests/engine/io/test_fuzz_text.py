"""Property-based tests of the text readers (CSV, TSV, .txt, JSON Lines) through a real import.

Every generated file is imported into a real project store, rows only (what
`duplens import --no-encode` does). Whatever the bytes, the import either stores rows or
raises one clear InputError; valid tables read back cell for cell.
"""

from __future__ import annotations

import codecs
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import InputError
from engine.text import join_cells
from tests.engine.io.importing import (
    FUZZ,
    import_or_refuse,
    import_rows,
    scratch,
    stored_rows,
)

# Cells that break naive readers: leading zeros, numbers and nulls pandas would convert,
# quotes, delimiters, line breaks of every kind, formulas, non-ASCII.
SPECIAL_CELLS = [
    "08123", "007", "0", "-0", "1e5", "1,5", "NaN", "nan", "None", "null", "NULL", "N/A",
    "TRUE", "", " ", "  padded  ", '"', '""', '"quoted"', 'say "hi"', ",", ";", "\t", "|",
    "\n", "\r\n", "\r", "a\nb", "a\r\nb", "=1+1", "'", "\\", "café", "naïve – “quotes”", "€",
    "ÿ", "\ufeffbom inside",
]
# Characters each encoding can write (no NUL, no control characters: those make a file
# binary, which the "any bytes" tests cover).
_CP1252 = "".join(ch for ch in bytes(range(0x20, 256)).decode("cp1252", errors="ignore")
                  if ch.isprintable())
_LATIN1 = "".join(ch for ch in map(chr, range(0x20, 256)) if ch.isprintable())
_ANY = st.characters(exclude_categories=("Cs", "Cc"))
ALPHABETS = {"utf-8": _ANY, "utf-8-sig": _ANY, "utf-16": _ANY,
             "cp1252": st.sampled_from(_CP1252), "latin-1": st.sampled_from(_LATIN1)}


def cells(encoding: str) -> st.SearchStrategy[str]:
    fits = [c for c in SPECIAL_CELLS if _encodes(c, encoding)]
    return st.one_of(st.sampled_from(fits), st.text(ALPHABETS[encoding], max_size=12))


def _encodes(text: str, encoding: str) -> bool:
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


@st.composite
def tables(draw, encoding: str) -> tuple[list[str], list[list[str]]]:
    """A header of 2-5 distinct names (as a reader would keep them) and 1-8 rows."""
    name = st.text(ALPHABETS[encoding], min_size=1, max_size=8).filter(
        lambda n: n == n.strip() and not n.startswith("\ufeff"))
    width = draw(st.integers(2, 5))
    names = draw(st.lists(name, min_size=width, max_size=width, unique=True))
    rows = draw(st.lists(st.lists(cells(encoding), min_size=width, max_size=width),
                         min_size=1, max_size=8))
    return names, rows


def csv_bytes(names: list[str], rows: list[list[str]], *, delimiter: str = ",",
              encoding: str = "utf-8", terminator: str = "\r\n",
              quote_all: bool = False) -> bytes:
    """RFC 4180 CSV. Not csv.writer: with "\n" line ends it leaves a cell of a lone "\r"
    unquoted, which then reads back as part of the line end (its output is ambiguous)."""

    def field(cell: str) -> str:
        if quote_all or any(ch in cell for ch in (delimiter, '"', "\r", "\n")):
            return '"' + cell.replace('"', '""') + '"'
        return cell

    lines = (delimiter.join(map(field, row)) + terminator for row in [names, *rows])
    return "".join(lines).encode(encoding)


def expected_rows(names: list[str], rows: list[list[str]]) -> list[tuple[int, str, dict]]:
    """What the store must hold: every row with any cell (all-empty rows are not rows) and
    a non-blank text column (the first), numbered from 1, every cell exactly as written."""
    return [(number, join_cells(row[:1]), dict(zip(names, row, strict=True)))
            for number, row in enumerate(rows, start=1)
            if any(row) and join_cells(row[:1])]


def assert_round_trip(store, path, names, rows, **options) -> None:
    expected = expected_rows(names, rows)
    if not any(any(row) for row in rows):
        with pytest.raises(InputError, match="no data rows"):
            import_rows(store, path, names[:1], **options)
        return
    if not expected:     # rows, but the text column blank in each: refused, nothing stored
        with pytest.raises(InputError, match="has no text"):
            import_rows(store, path, names[:1], **options)
        return
    report = import_rows(store, path, names[:1], **options)
    assert report.already_imported or report.rows_imported == len(expected)
    assert stored_rows(store, report.source_id) == expected


# -- round trips ----------------------------------------------------------------------------


@FUZZ
@given(st.data())
def test_csv_cells_read_back_exactly_with_detection(store, data) -> None:
    """Comma-separated, in any encoding detection can be sure of: nothing is named."""
    encoding = data.draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16"]))
    names, rows = data.draw(tables(encoding))
    content = csv_bytes(names, rows, encoding=encoding,
                        terminator=data.draw(st.sampled_from(["\r\n", "\n"])),
                        quote_all=data.draw(st.booleans()))
    with scratch() as folder:
        path = folder / "table.csv"
        path.write_bytes(content)
        assert_round_trip(store, path, names, rows)


@FUZZ
@given(st.data())
def test_cells_read_back_exactly_in_any_dialect_and_encoding(store, data) -> None:
    """Any delimiter, quoting, line ending and encoding, as the user names them (a cp1252
    file can be valid UTF-8 and a ';' file can split on ',' too: only naming is certain)."""
    encoding = data.draw(st.sampled_from(sorted(ALPHABETS)))
    delimiter = data.draw(st.sampled_from([",", ";", "\t", "|"]))
    names, rows = data.draw(tables(encoding))
    content = csv_bytes(names, rows, delimiter=delimiter, encoding=encoding,
                        terminator=data.draw(st.sampled_from(["\r\n", "\n"])),
                        quote_all=data.draw(st.booleans()))
    suffix = data.draw(st.sampled_from([".csv", ".tsv", ".txt"]))
    with scratch() as folder:
        path = folder / f"table{suffix}"
        path.write_bytes(content)
        assert_round_trip(store, path, names, rows, encoding=encoding, delimiter=delimiter,
                          quoting=True)


@FUZZ
@given(st.data())
def test_detected_dialect_reads_every_cell_back(store, data) -> None:
    """Whatever detection guesses, the import ends in rows or one clear error; when the guess
    is the dialect and encoding the file was written in, every cell comes back."""
    encoding = data.draw(st.sampled_from(sorted(ALPHABETS)))
    delimiter = data.draw(st.sampled_from([",", ";", "\t", "|"]))
    names, rows = data.draw(tables(encoding))
    content = csv_bytes(names, rows, delimiter=delimiter, encoding=encoding,
                        terminator=data.draw(st.sampled_from(["\r\n", "\n"])))
    with scratch() as folder:
        path = folder / data.draw(st.sampled_from(["t.csv", "t.tsv", "t.txt"]))
        path.write_bytes(content)
        report = import_or_refuse(store, path)
        if report is None:
            return
        same = report.format.delimiter == delimiter and codecs.lookup(
            report.format.encoding).name == codecs.lookup(encoding).name
        if same and report.rows_imported:
            assert stored_rows(store, report.source_id) == expected_rows(names, rows)


@FUZZ
@given(st.lists(st.dictionaries(st.text(_ANY, min_size=1, max_size=6),
                                st.one_of(st.text(_ANY, max_size=10), st.sampled_from(
                                    SPECIAL_CELLS)), min_size=1, max_size=4),
                min_size=1, max_size=6))
def test_jsonl_strings_read_back_exactly(store, records) -> None:
    keys = list(dict.fromkeys(k for record in records for k in record))
    names = [k.strip() for k in keys]
    if len(set(names)) != len(names) or not all(names) or any(
            n.startswith("\ufeff") for n in names):
        return  # names the reader would rename; the renaming has tests of its own
    rows = [[record.get(k, "") for k in keys] for record in records]
    with scratch() as folder:
        path = folder / "t.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        assert_round_trip(store, path, names, rows)


# -- whatever the bytes ---------------------------------------------------------------------

# Fragments that meet the readers' edge cases more often than uniform random bytes do:
# delimiters, quotes, every line ending, BOMs, NUL, bytes invalid in UTF-8, a UTF-8 encoded
# lone surrogate, UTF-16 halves, the start of other file formats.
FRAGMENTS = [
    b",", b";", b"\t", b"|", b'"', b"'", b"\n", b"\r\n", b"\r", b"\x00", b"a", b"bc", b" ",
    b"08123", codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE, b"\xe9", b"\x81",
    b"\xc3\xa9", b"\xed\xa0\x80", b"\xff", b"a\x00", b"\x00a", b"PK\x03\x04", b"{", b"}",
    b"[", b'{"a": 1}', b'{"a": "\\ud800"}', b"\\u0000", b"\x1a", b"\x0c",
    b'{"a": ' + b"9" * 5000 + b"}", b'{"a": ' + b"[" * 5000, b"]" * 5000,
]
hostile_bytes = st.one_of(
    st.binary(max_size=300),
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.binary(max_size=4)),
             max_size=80).map(b"".join),
)


@FUZZ
@given(hostile_bytes, st.sampled_from(["x.csv", "x.tsv", "x.txt", "x.jsonl", "x.ndjson"]))
def test_any_bytes_end_in_rows_or_one_clear_error(store, content, name) -> None:
    with scratch() as folder:
        path = folder / name
        path.write_bytes(content)
        import_or_refuse(store, path)


@FUZZ
@given(hostile_bytes, st.sampled_from([None, "utf-8", "utf-16", "cp1252", "latin-1",
                                       "utf-16-be", "utf-8-sig"]),
       st.sampled_from([None, ",", ";", "\t", "|", " "]), st.sampled_from([None, True, False]))
def test_any_bytes_with_any_named_dialect(store, content, encoding, delimiter, quoting) -> None:
    with scratch() as folder:
        path = folder / "x.csv"
        path.write_bytes(content)
        import_or_refuse(store, path, encoding=encoding, delimiter=delimiter, quoting=quoting)


# JSON escapes carry what no text file can: NUL and lone surrogates ("\\ud800").
_JSON_CHARS = st.one_of(st.characters(), st.sampled_from(["\x00", "\ud800", "\udfff"]))


@FUZZ
@given(st.lists(st.one_of(
    st.lists(_JSON_CHARS, max_size=20).map("".join),  # st.text drops surrogates
    st.integers(), st.floats(), st.booleans(), st.none(),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
                                                         max_size=2)), min_size=1, max_size=5),
    st.sampled_from(["x.jsonl", "x.ndjson"]))
def test_jsonl_values_of_every_type_are_stored(store, values, name) -> None:
    """NUL and lone surrogates arrive through JSON escapes; they must not break the store."""
    lines = [json.dumps({"text": value, "n": i}) for i, value in enumerate(values)]
    with scratch() as folder:
        path = folder / name
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        report = import_or_refuse(store, path, columns=["text"])
        if report is not None:
            for _, text, _extra in stored_rows(store, report.source_id):
                text.encode("utf-8")  # storable: no lone surrogate got through
