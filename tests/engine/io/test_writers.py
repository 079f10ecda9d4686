"""Exports must not carry formulas, must keep numbers numeric and must never be half written."""

from __future__ import annotations

import csv

import openpyxl
import pandas as pd
import pytest

from engine.errors import InputError
from engine.io import export_table, neutralise_cell

FORMULAS = ["=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"]
SAFE = ["plain", "a=b", "", "'quoted", "1+1", " =padded"]


@pytest.mark.parametrize("value", FORMULAS)
def test_formula_like_text_gets_an_apostrophe(value) -> None:
    assert neutralise_cell(value) == "'" + value


@pytest.mark.parametrize("value", [*SAFE, 3, -1, 2.5, None, True])
def test_other_values_are_unchanged(value) -> None:
    assert neutralise_cell(value) == value


def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "text": ["=1+1", "+1", "-1", "@SUM(A1)", "plain", "a=b"],
        "count": [1, -2, 3, 4, 5, 6],
        "score": [0.5, -1.25, float("nan"), 1.0, 2.0, 3.0],
    })


def test_csv_export_is_utf8_with_bom_and_neutralised(tmp_path) -> None:
    path = tmp_path / "out.csv"
    export_table(frame(), path)
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    with path.open(encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["text", "count", "score"]
    assert [row[0] for row in rows[1:]] == ["'=1+1", "'+1", "'-1", "'@SUM(A1)", "plain", "a=b"]
    assert rows[2][1:] == ["-2", "-1.25"]
    assert rows[3][2] == ""


def test_xlsx_export_is_neutralised_and_keeps_numbers(tmp_path) -> None:
    path = tmp_path / "out.xlsx"
    export_table(frame(), path)
    sheet = openpyxl.load_workbook(path).active
    rows = list(sheet.iter_rows(values_only=True))
    assert rows[0] == ("text", "count", "score")
    assert [row[0] for row in rows[1:]] == ["'=1+1", "'+1", "'-1", "'@SUM(A1)", "plain", "a=b"]
    assert all(cell.data_type == "s" for cell in sheet["A"])
    assert rows[2][1:] == (-2, -1.25)
    assert rows[3][2] is None
    assert all(isinstance(row[1], int) for row in rows[1:])


def test_xlsx_export_drops_characters_xml_cannot_hold(tmp_path) -> None:
    path = tmp_path / "out.xlsx"
    export_table(pd.DataFrame({"=name": ["bell\x07 and tab\there"]}), path)
    rows = list(openpyxl.load_workbook(path).active.iter_rows(values_only=True))
    assert rows == [("'=name",), ("bell and tab\there",)]


def test_csv_header_is_neutralised_too(tmp_path) -> None:
    path = tmp_path / "out.csv"
    export_table(pd.DataFrame({"=cmd": ["x"]}), path)
    assert path.read_text(encoding="utf-8-sig").splitlines()[0] == "'=cmd"


def test_unknown_extension(tmp_path) -> None:
    with pytest.raises(InputError, match=r"out\.ods: cannot export to this file type"):
        export_table(frame(), tmp_path / "out.ods")
    assert list(tmp_path.iterdir()) == []


def test_a_failed_export_leaves_the_old_file_and_no_leftovers(tmp_path) -> None:
    path = tmp_path / "out.xlsx"
    path.write_bytes(b"previous export")
    unstorable = pd.DataFrame({"text": ["fine", {"a": "dict"}]})
    with pytest.raises(ValueError):
        export_table(unstorable, path)
    assert path.read_bytes() == b"previous export"
    assert list(tmp_path.iterdir()) == [path]


def test_an_export_replaces_the_old_file(tmp_path) -> None:
    path = tmp_path / "out.csv"
    path.write_text("old")
    export_table(pd.DataFrame({"a": ["new"]}), path)
    assert path.read_text(encoding="utf-8-sig").splitlines() == ["a", "new"]
    assert list(tmp_path.iterdir()) == [path]


def test_cannot_write_to_a_missing_folder(tmp_path) -> None:
    with pytest.raises(InputError, match=r"out\.csv: cannot write \("):
        export_table(frame(), tmp_path / "missing" / "out.csv")


@pytest.mark.parametrize("streamed", [False, True])
def test_a_text_longer_than_an_excel_cell_is_refused_in_one_line_and_nothing_is_lost(
        tmp_path, streamed) -> None:
    """openpyxl writes such a text cut to 32,767 characters without a word: a document's
    end would be gone from the .xlsx. The export is refused instead, the earlier file kept,
    and the line says that a .csv keeps it whole (which it does)."""
    from engine.io.writers import EXCEL_CELL_CHARS, write_rows

    long = "word " * (EXCEL_CELL_CHARS // 5 + 100)
    path = tmp_path / "out.xlsx"
    path.write_bytes(b"previous export")
    with pytest.raises(InputError, match=r"^out\.xlsx: row 2's text holds 33,2\d\d characters,"
                                         r" more than an Excel cell keeps \(32,767\); export to"
                                         r" \.csv"):
        if streamed:
            write_rows(path, ["id", "text"], [["a", "short"], ["b", long]])
        else:
            export_table(pd.DataFrame({"id": ["a", "b"], "text": ["short", long]}), path)
    assert path.read_bytes() == b"previous export"
    assert list(tmp_path.iterdir()) == [path]
    kept = tmp_path / "out.csv"
    write_rows(kept, ["id", "text"], [["a", "short"], ["b", long]])
    with kept.open(encoding="utf-8-sig", newline="") as fh:
        assert list(csv.reader(fh))[2][1] == long
