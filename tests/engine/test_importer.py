"""`check_table`: a file the import would refuse for what it holds, refused without a
project, with the import's own words."""

from __future__ import annotations

import pytest

from engine.errors import InputError
from engine.importer import check_table


def test_a_blank_text_column_is_refused_in_the_imports_words(tmp_path):
    blank = tmp_path / "blank.csv"
    blank.write_text("question,topic\n,a\n ,b\n", encoding="utf-8")
    with pytest.raises(InputError) as refused:
        check_table(blank, ["question"])
    assert str(refused.value) == ('blank.csv: column "question" has no text (its 2 rows are '
                                  'all blank); choose the column that holds the text')
    check_table(blank, ["question", "topic"])          # another column has text: passes


def test_it_reads_up_to_the_first_row_with_text(tmp_path):
    """Blank chunks are read (their progress said), the first text ends the check: a usable
    file costs a chunk, however long it is."""
    lines = ["qid,question", *[f"b{i}," for i in range(250)],
             *[f"q{i},question {i}" for i in range(5_000)]]
    path = tmp_path / "late.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    seen: list[int] = []
    check_table(path, ["question"], id_column="qid", chunk_rows=100,
                progress=lambda p: seen.append(p.done))
    assert seen == [100, 200]


@pytest.mark.parametrize(("columns", "id_column", "said"), [
    ([], None, "choose at least one text column"),
    (["title"], None, "title"),
    (["question"], "ref", "ref"),
])
def test_missing_columns_are_refused_as_the_import_refuses_them(tmp_path, columns, id_column,
                                                                said):
    path = tmp_path / "q.csv"
    path.write_text("qid,question\nq1,Why?\n", encoding="utf-8")
    with pytest.raises(InputError, match=said):
        check_table(path, columns, id_column=id_column)


def test_a_file_with_no_data_rows_is_refused(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("qid,question\n", encoding="utf-8")
    with pytest.raises(InputError, match="no data rows"):
        check_table(path, ["question"])
