"""Hostile and damaged .xlsx workbooks: zip bombs, lying zip directories, entity bombs, broken
XML. Each ends in a correct import or one clear InputError, found before memory runs out."""

from __future__ import annotations

import sqlite3
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.errors import InputError
from engine.io import detect_format, read_columns
from tests.engine.io.importing import FUZZ, import_or_refuse, refusal, scratch, stored_rows
from tests.engine.io.zips import deflated, padded_xml, repacked, workbook_parts

SHEET = "xl/worksheets/sheet1.xml"
MAIN = b'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
SHEET_HEAD = b'<?xml version="1.0"?><worksheet ' + MAIN + b"><sheetData>"
SHEET_TAIL = b"</sheetData></worksheet>"


@pytest.fixture(scope="module")
def parts():
    return workbook_parts([["id", "text"], [1, "hello"], [2, "08123"]])


@pytest.fixture(scope="module")
def zip_bomb(tmp_path_factory, parts):
    """A 3 MB workbook whose sheet unpacks to 3.2 GB of (valid) XML."""
    bomb = padded_xml(SHEET, SHEET_HEAD, SHEET_TAIL, 3_200_000_000)
    return repacked(tmp_path_factory.mktemp("bomb") / "data.xlsx", parts, {SHEET: bomb})


def test_the_test_workbook_imports(store, tmp_path, parts) -> None:
    path = repacked(tmp_path / "plain.xlsx", parts, {})
    report = import_or_refuse(store, path, columns=["text"])
    assert [text for _, text, _ in stored_rows(store, report.source_id)] == ["hello", "08123"]


def test_a_zip_bomb_is_refused_from_the_zip_directory(store, zip_bomb) -> None:
    assert zip_bomb.stat().st_size < 5_000_000
    with zipfile.ZipFile(zip_bomb) as archive:  # a real bomb, as its directory says
        assert archive.getinfo(SHEET).file_size == 3_200_000_000
    message = ("data.xlsx: a sheet expands to 3.2 GB when unpacked; Duplens reads sheets up "
               "to 1.0 GB")
    with pytest.raises(InputError) as caught:
        detect_format(zip_bomb)
    assert str(caught.value) == message
    assert refusal(store, zip_bomb, columns=["text"]) == message


def test_a_directory_that_understates_a_part_gets_no_more_than_it_declares(tmp_path,
                                                                           parts) -> None:
    """zipfile stops inflating at the declared size, so a lying directory is a damaged
    file, not a bomb: the 200 MB behind a 4 KB entry are never unpacked."""
    bomb = padded_xml(SHEET, SHEET_HEAD, SHEET_TAIL, 200_000_000)
    bomb.size = 4096
    path = repacked(tmp_path / "liar.xlsx", parts, {SHEET: bomb})
    with pytest.raises(InputError, match=r"^liar\.xlsx: (is not a valid \.xlsx workbook|the "
                                         r"sheet is damaged and cannot be read)"):
        read_columns(path, detect_format(path))


def test_an_oversized_styles_part_is_refused(tmp_path, parts) -> None:
    styles = padded_xml("xl/styles.xml", parts["xl/styles.xml"][:-len(b"</styleSheet>")],
                        b"</styleSheet>", 100_000_000)
    path = repacked(tmp_path / "styles.xlsx", parts, {"xl/styles.xml": styles})
    with pytest.raises(InputError, match=r"^styles\.xlsx: part xl/styles\.xml expands to 100 MB"
                                         r" when unpacked; Duplens reads workbook parts up to "
                                         r"64 MB$"):
        detect_format(path)


def test_a_part_packed_with_lzma_is_refused(tmp_path, parts) -> None:
    """zipfile inflates LZMA and bzip2 without an output bound per read; Excel never uses
    them."""
    path = tmp_path / "lzma.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in parts.items():
            method = zipfile.ZIP_LZMA if name == SHEET else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=method)
    with pytest.raises(InputError, match=rf"lzma\.xlsx: part {SHEET} is packed with a "
                                         "compression Excel does not use"):
        detect_format(path)


def test_an_entity_bomb_in_the_sheet_is_refused(store, tmp_path, parts) -> None:
    """'Billion laughs': ten nested entities expand to 10^9 "lol"s; expat refuses them."""
    entities = b"".join(
        b'<!ENTITY l%d "%s">' % (i, (b"&l%d;" % (i - 1)) * 10 if i else b"lol")
        for i in range(10))
    sheet = (b'<?xml version="1.0"?><!DOCTYPE worksheet [' + entities + b"]><worksheet "
             + MAIN + b'><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>text</t></is>'
             b'</c></row><row r="2"><c r="A2" t="inlineStr"><is><t>&l9;</t></is></c></row>'
             + SHEET_TAIL)
    path = repacked(tmp_path / "laughs.xlsx", parts, {SHEET: deflated(sheet, SHEET)})
    assert refusal(store, path, columns=["text"]) == "laughs.xlsx: is not a valid .xlsx workbook"


def test_a_row_numbered_past_excels_last_row_is_refused(store, tmp_path, parts) -> None:
    """openpyxl fills gaps in row numbers with empty rows: two billion of them otherwise."""
    sheet = (SHEET_HEAD + b'<row r="1"><c r="A1" t="inlineStr"><is><t>text</t></is></c></row>'
             b'<row r="2000000000"><c r="A2000000000" t="inlineStr"><is><t>x</t></is></c>'
             b"</row>" + SHEET_TAIL)
    path = repacked(tmp_path / "far.xlsx", parts, {SHEET: deflated(sheet, SHEET)})
    assert refusal(store, path, columns=["text"]).startswith(
        "far.xlsx: the sheet numbers rows past 1,048,576")


def test_a_surrogate_character_reference_is_refused(store, tmp_path, parts) -> None:
    """XML has no lone surrogates (expat refuses "&#xD800;"), so no workbook cell holds one
    that SQLite could not store; the file is refused in one line."""
    sheet = (SHEET_HEAD + b'<row r="1"><c r="A1" t="inlineStr"><is><t>text</t></is></c></row>'
             b'<row r="2"><c r="A2" t="inlineStr"><is><t>a&#xD800;b</t></is></c></row>'
             + SHEET_TAIL)
    path = repacked(tmp_path / "surrogate.xlsx", parts, {SHEET: deflated(sheet, SHEET)})
    assert refusal(store, path, columns=["text"]) == "surrogate.xlsx: is not a valid .xlsx workbook"


def test_files_that_are_not_workbooks(store, tmp_path) -> None:
    docx = tmp_path / "word.xlsx"  # a zip, but of something else
    with zipfile.ZipFile(docx, "w") as archive:
        archive.writestr("word/document.xml", "<document/>")
    database = tmp_path / "db.xlsx"
    sqlite3.connect(database).execute("create table t(x)").connection.close()
    for path in (docx, database):
        with pytest.raises(InputError, match=rf"^{path.name}: is not a valid \.xlsx workbook$"):
            detect_format(path)


# -- damaged XML, found by hypothesis ---------------------------------------------------------

# Pieces that make openpyxl's parsers meet bad cell references, types, numbers, dates,
# shared-string indices, character references and escapes.
XML_PIECES = [
    b"<", b">", b"</row>", b'<row r="3">', b'<row r="0">', b'<row r="-1">', b'r="ZZZZ1"',
    b'r="A1048577"', b'<c r="B2" t="n"><v>abc</v></c>', b'<c r="C2" t="s"><v>99</v></c>',
    b'<c r="D2" s="999"><v>1</v></c>', b'<c r="E2" t="d"><v>not a date</v></c>',
    b'<c r="F2" s="1"><v>1e308</v></c>', b'<c r="G2" t="b"><v>2</v></c>', b"&#xD800;",
    b"&#0;", b"_xD800_", b"_x0000_", b"&undefined;", b"\xff\xfe", b"<![CDATA[", b"]]>",
    b'<c r="H2" t="e"><v>#REF!</v></c>', b"<v>9" + b"9" * 400 + b"</v>",
]


@FUZZ
@given(st.sampled_from(["xl/worksheets/sheet1.xml", "xl/workbook.xml", "xl/styles.xml",
                        "[Content_Types].xml", "xl/_rels/workbook.xml.rels"]),
       st.data())
def test_damaged_parts_end_in_rows_or_one_clear_error(store, parts, name, data) -> None:
    xml = parts[name]
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(xml)))
        cut = data.draw(st.integers(0, 20))
        piece = data.draw(st.one_of(st.sampled_from(XML_PIECES), st.binary(max_size=8)))
        xml = xml[:at] + piece + xml[at + cut:]
    with scratch() as folder:
        path = repacked(folder / "damaged.xlsx", parts, {name: deflated(xml, name)})
        import_or_refuse(store, path)

