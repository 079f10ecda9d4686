"""Column names and cells as every reader hands them out, and the column cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InputError
from engine.io.limits import MAX_COLUMNS, size_text
from engine.io.records import clean_names, storable
from tests.engine.io.importing import refusal, stored_rows

PATH = Path("q.csv")


def test_repeated_names_get_pandas_style_suffixes() -> None:
    assert clean_names(PATH, ["a", "a", "a.1", "a", "", " "]) == [
        "a", "a.1", "a.1.1", "a.2", "column_5", "column_6"]


def test_the_widest_table_of_equal_names_stays_linear() -> None:
    names = clean_names(PATH, ["x"] * MAX_COLUMNS)
    assert len(set(names)) == MAX_COLUMNS
    assert names[:3] == ["x", "x.1", "x.2"] and names[-1] == f"x.{MAX_COLUMNS - 1}"


def test_a_byte_order_mark_is_not_part_of_a_name() -> None:
    """A UTF-8 file read with --encoding utf-8 keeps its BOM before the first name."""
    assert clean_names(PATH, ["\ufeffid", "text"]) == ["id", "text"]


def test_more_columns_than_excel_has_are_refused() -> None:
    with pytest.raises(InputError, match=r"^q\.csv: the table has 16,385 columns; Duplens "
                                         r"reads tables of up to 16,384 columns"):
        clean_names(PATH, map(str, range(MAX_COLUMNS + 1)))


def test_lone_surrogates_become_replacement_characters() -> None:
    assert storable("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert storable("ok 😀") == "ok 😀"


def test_sizes_read_as_people_write_them() -> None:
    assert [size_text(n) for n in (512, 12_000, 64_000_000, 3_200_000_000)] == [
        "512 bytes", "12 KB", "64 MB", "3.2 GB"]


def test_a_csv_of_100000_columns_is_refused_in_one_line(store, tmp_path) -> None:
    path = tmp_path / "wide.csv"
    header = ",".join(f"c{i}" for i in range(100_000))
    path.write_text(header + "\n" + ",".join("v" * 1 for _ in range(100_000)) + "\n",
                    encoding="utf-8")
    assert refusal(store, path, columns=["c0"]) == (
        "wide.csv: the table has 100,000 columns; Duplens reads tables of up to 16,384 "
        "columns (Excel's limit)")


@pytest.mark.slow
def test_the_widest_allowed_csv_imports_every_cell(store, tmp_path) -> None:
    """Chunks of a wide table hold fewer rows, never fewer cells' worth of truth."""
    from engine.importer import import_table

    path = tmp_path / "widest.csv"
    names = [f"c{i}" for i in range(MAX_COLUMNS)]
    rows = [[f"{r}-{i}" if i % 1000 == 0 else "" for i in range(MAX_COLUMNS)]
            for r in range(1, 4)]
    path.write_text("\n".join(",".join(row) for row in [names, *rows]) + "\n",
                    encoding="utf-8")
    report = import_table(store, path, ["c0"], chunk_rows=2)
    stored = stored_rows(store, report.source_id)
    assert [(row, text) for row, text, _ in stored] == [(1, "1-0"), (2, "2-0"), (3, "3-0")]
    assert stored[2][2] == dict(zip(names, rows[2], strict=True))


def test_a_missing_column_message_stays_one_short_line(store, tmp_path) -> None:
    """Header cells may hold newlines, and a wide table has thousands of names."""
    path = tmp_path / "names.csv"
    header = ['"two\nlines"', *(f"c{i}" for i in range(100))]
    path.write_text(",".join(header) + "\n" + ",".join(["x"] * 101) + "\n", encoding="utf-8")
    message = refusal(store, path, columns=["missing\nname"])
    assert message.startswith('names.csv: no column "missing\\nname"; columns are: two\\nlines,'
                              " c0, c1, ")
    assert message.endswith("c28 and 71 more")
