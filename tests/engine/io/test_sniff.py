"""Encoding and delimiter guesses on raw samples, without going through a reader."""

from __future__ import annotations

import codecs
import csv

import pytest

from engine.io import sniff
from engine.io.sniff import FileSample

TEXT = "id,question\n1,café naïve – “quotes”\n"


def whole(data: bytes) -> FileSample:
    return FileSample(data, complete=True)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (codecs.BOM_UTF8 + TEXT.encode(), "utf-8-sig"),
        (TEXT.encode("utf-16"), "utf-16"),  # native order, with BOM
        (codecs.BOM_UTF16_BE + TEXT.encode("utf-16-be"), "utf-16"),
        (TEXT.encode("utf-16-le"), "utf-16-le"),
        (TEXT.encode("utf-16-be"), "utf-16-be"),
        (TEXT.encode("utf-8"), "utf-8"),
        (b"id,question\n1,plain ascii\n", "utf-8"),
        (TEXT.encode("cp1252"), "cp1252"),
        ("id,q\n1,café\n".encode("latin-1") + b"\x81\n", "latin-1"),  # 0x81: not cp1252
    ],
)
def test_detect_encoding(data: bytes, expected: str) -> None:
    assert sniff.detect_encoding(whole(data)) == expected


def test_utf8_character_cut_at_the_end_of_the_sample_is_not_an_error() -> None:
    data = ("x" * 99 + "é").encode()  # "é" is two bytes; cut after the first one
    cut = FileSample(data[:100], complete=False)
    assert sniff.detect_encoding(cut) == "utf-8"
    assert sniff.decode_sample(cut, "utf-8") == "x" * 99


def test_a_cut_character_at_the_end_of_the_whole_file_is_an_error() -> None:
    with pytest.raises(UnicodeDecodeError):
        sniff.decode_sample(whole("é".encode()[:1]), "utf-8")


def test_read_sample_says_whether_it_has_the_whole_file(tmp_path) -> None:
    path = tmp_path / "a.csv"
    path.write_bytes(b"0123456789")
    assert sniff.read_sample(path, limit=10) == FileSample(b"0123456789", complete=True)
    assert sniff.read_sample(path, limit=4) == FileSample(b"0123", complete=False)


def test_binary_data_is_recognised() -> None:
    noise = bytes(range(256)) * 16
    assert sniff.detect_encoding(whole(noise)) == "latin-1"
    assert sniff.looks_binary(noise.decode("latin-1"))
    assert sniff.looks_binary(bytes(range(1, 256)).decode("latin-1"))  # no NUL, many controls
    assert not sniff.looks_binary(TEXT + "\x0c page break\n")


def test_known_binary_formats_are_named() -> None:
    assert "PNG" in sniff.binary_kind(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert ".xlsx" in sniff.binary_kind(b"PK\x03\x04\x14\x00")
    assert sniff.binary_kind(TEXT.encode()) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id,question\n1,a\n2,b\n", ","),
        ("id\tquestion\n1\ta, b\n2\tc, d\n", "\t"),
        ("id;price;text\n1;2,50;a\n2;3,75;b\n", ";"),  # decimal commas
        ("id|text\n1|a\n2|b\n", "|"),
        ('id,text\n1,"a; b\nc; d"\n2,"e; f"\n', ","),
    ],
)
def test_detect_delimiter(text: str, expected: str) -> None:
    assert sniff.detect_delimiter(text, "?") == expected


def test_detect_delimiter_falls_back_to_the_default() -> None:
    assert sniff.detect_delimiter("question\nwhat?\nwhy?\n", "\t") == "\t"


def test_a_quote_left_open_past_128_kib_keeps_quoting_on() -> None:
    """Under the csv module's default field cap (128 KiB, what a fresh process has), the
    sample's open quote read as "quotes are plain characters" and the file was imported
    line by line; the reader now stops it at the row cap instead."""
    text = 'id,text\n1,ok\n2,"opened here\n' + "a line, and more\n" * 20_000
    default = csv.field_size_limit(131_072)
    try:
        assert sniff.detect_quoting(text, ",", complete=False) is True
        assert sniff.detect_delimiter(text, ",") == ","
    finally:
        csv.field_size_limit(max(default, csv.field_size_limit()))
