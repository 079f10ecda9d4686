"""Bounded, counted lines: a row may not outgrow the cap, a NUL byte is named by its line."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.io import TableFormat, detect_format, iter_table
from engine.io.delimited import csv_rows
from engine.io.limits import MAX_ROW_CHARS
from engine.io.sniff import SAMPLE_BYTES
from engine.io.text_lines import text_lines

UTF8 = TableFormat("csv", encoding="utf-8", delimiter=",", quoting=True)


def lines_of(path, cap, multiline=False):
    with text_lines(path, UTF8, max_row_chars=cap, multiline=multiline) as lines:
        return list(lines)


def test_lines_within_the_cap_are_read_whole(tmp_path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("a,b\n" + "x" * 95 + ",y\n", encoding="utf-8")
    assert lines_of(path, 100) == ["a,b\n", "x" * 95 + ",y\n"]


def test_a_line_over_the_cap_is_refused_without_reading_the_rest(tmp_path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("a,b\n" + "x" * 10_000, encoding="utf-8")
    with pytest.raises(InputError, match=r"^q\.csv: line 2: a row longer than 100 characters "
                                         r"\(a quote that is never closed\?\); Duplens reads "
                                         r"rows of up to 100 characters$"):
        lines_of(path, 100)


def test_a_record_spanning_lines_shares_one_budget(tmp_path) -> None:
    """A quote that never closes turns the rest of the file into one record: it is stopped
    at the cap, named by the line where it started."""
    path = tmp_path / "q.csv"
    path.write_text('id,text\n1,ok\n2,"never closed\n' + "more text\n" * 50, encoding="utf-8")
    with text_lines(path, UTF8, max_row_chars=200, multiline=True) as lines:
        rows = csv_rows(path, lines, ",")
        assert next(rows) == (1, ["id", "text"])
        assert next(rows) == (2, ["1", "ok"])
        with pytest.raises(InputError, match=r"^q\.csv: line 3: a row longer than 200 char"):
            next(rows)


def test_the_real_cap_is_tens_of_megabytes() -> None:
    assert MAX_ROW_CHARS >= 10_000_000  # far above the 5 MB cells test_readers reads whole


def test_a_nul_byte_after_the_detection_sample_is_named_by_line(tmp_path) -> None:
    """The sample check refuses NULs in the first megabyte; one further on is refused by
    the line reader instead of reaching the store."""
    body = "".join(f"{i},plain question text\n" for i in range(SAMPLE_BYTES // 20))
    path = tmp_path / "q.csv"
    path.write_bytes(("id,text\n" + body).encode() + b"9,a\x00b\n")
    fmt = detect_format(path)
    with pytest.raises(InputError, match=r"^q\.csv: line \d+ contains a NUL byte"):
        list(iter_table(path, fmt))


def test_an_encoding_that_is_not_a_text_encoding_is_refused(tmp_path) -> None:
    path = tmp_path / "q.csv"
    path.write_text("a,b\n1,2\n", encoding="utf-8")
    for name in ("rot13", "hex", "zlib", "base64"):
        with pytest.raises(InputError, match=rf"^q\.csv: unknown encoding '{name}'$"):
            detect_format(path, encoding=name)


def test_utf16_named_for_a_file_without_a_bom_is_refused(tmp_path) -> None:
    path = tmp_path / "q.csv"
    path.write_bytes("a,b\n1,2\n".encode("utf-16-le"))
    with pytest.raises(InputError, match=r"^q\.csv: is not valid utf-16 text$"):
        detect_format(path, encoding="utf-16")


@pytest.mark.parametrize(("delimiter", "what"), [('"', "the quote character"),
                                                 ("\n", "a newline"), ("\r", "a newline")])
def test_a_delimiter_that_cannot_split_a_table_is_refused(tmp_path, delimiter, what) -> None:
    path = tmp_path / "q.csv"
    path.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match=rf"^q\.csv: the delimiter cannot be {what}$"):
        detect_format(path, delimiter=delimiter)
