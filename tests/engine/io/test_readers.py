"""Reading every supported kind of table, and every way a user's file can be broken."""

from __future__ import annotations

import json
import os
from pathlib import Path

import openpyxl
import pandas as pd
import pytest

from engine.errors import InputError
from engine.io import (
    ReadReport,
    TableFormat,
    detect_format,
    iter_table,
    preview_table,
    read_columns,
    require_columns,
)
from engine.io.sniff import SAMPLE_BYTES
from tests.required import needs_unprivileged_user

CP1252_TEXT = "café naïve – “quotes”"


def write(path: Path, content: str | bytes, encoding: str = "utf-8") -> Path:
    data = content if isinstance(content, bytes) else content.encode(encoding)
    path.write_bytes(data)
    return path


def read_all(path: Path, **detect: str) -> tuple[pd.DataFrame, ReadReport]:
    report = ReadReport()
    chunks = list(iter_table(path, detect_format(path, **detect), report=report))
    return pd.concat(chunks), report


def rows_of(frame: pd.DataFrame) -> list[list[str]]:
    return frame.to_numpy().tolist()


def workbook(path: Path, sheets: dict[str, list[list[object]]]) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


# -- encodings and delimiters ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("encoding", "detected", "text"),
    [
        ("utf-8", "utf-8", CP1252_TEXT),
        ("utf-8-sig", "utf-8-sig", CP1252_TEXT),
        ("utf-16", "utf-16", CP1252_TEXT),
        ("utf-16-le", "utf-16-le", CP1252_TEXT),  # no BOM: found by its NUL bytes
        ("cp1252", "cp1252", CP1252_TEXT),
        ("latin-1", "cp1252", "café naïve ÿ"),  # cp1252 reads these bytes the same way
    ],
)
def test_encodings_are_detected_and_decoded(tmp_path, encoding, detected, text) -> None:
    path = write(tmp_path / "q.csv", f"id,question\n1,{text}\n2,plain\n", encoding)
    frame, _ = read_all(path)
    assert detect_format(path).encoding == detected
    assert list(frame.columns) == ["id", "question"]
    assert rows_of(frame) == [["1", text], ["2", "plain"]]


def test_latin1_is_the_last_resort(tmp_path) -> None:
    path = write(tmp_path / "q.csv", b"id,question\n1,caf\xe9 \x81\n")
    frame, _ = read_all(path)
    assert detect_format(path).encoding == "latin-1"
    assert frame.loc[1, "question"] == "café \x81"


@pytest.mark.parametrize(
    ("name", "content", "delimiter"),
    [
        ("q.csv", "id,question\n1,a b\n", ","),
        ("q.tsv", "id\tquestion\n1\ta, b\n", "\t"),
        ("q.txt", "id;question\n1;a, b\n", ";"),
        ("q.csv", "id|question\n1|a, b\n", "|"),
    ],
)
def test_delimiters_are_detected(tmp_path, name, content, delimiter) -> None:
    path = write(tmp_path / name, content)
    frame, _ = read_all(path)
    assert detect_format(path).delimiter == delimiter
    assert list(frame.columns) == ["id", "question"]
    assert frame.loc[1, "id"] == "1"


def test_tsv_without_a_clear_delimiter_falls_back_to_tab(tmp_path) -> None:
    path = write(tmp_path / "q.tsv", "question\nwhat?\n")
    assert detect_format(path).delimiter == "\t"
    assert detect_format(tmp_path / "q.tsv").kind == "csv"


def test_explicit_encoding_and_delimiter_win(tmp_path) -> None:
    path = write(tmp_path / "q.csv", "a;b,c\n1;2,3\n", "cp1252")
    fmt = detect_format(path, encoding="latin-1", delimiter=",")
    assert fmt == TableFormat("csv", encoding="latin-1", delimiter=",", quoting=True)
    assert read_columns(path, fmt) == ["a;b", "c"]


def test_bad_explicit_encoding_or_delimiter(tmp_path) -> None:
    path = write(tmp_path / "q.csv", "a,b\n1,2\n")
    with pytest.raises(InputError, match=r"q\.csv: unknown encoding 'klingon'"):
        detect_format(path, encoding="klingon")
    with pytest.raises(InputError, match=r"q\.csv: the delimiter must be one character"):
        detect_format(path, delimiter=";;")
    path = write(tmp_path / "u.csv", "a,b\n1,café\n", "cp1252")
    with pytest.raises(InputError, match=r"u\.csv: is not valid utf-8 text"):
        detect_format(path, encoding="utf-8")


def test_quoted_fields_keep_newlines_delimiters_and_quotes(tmp_path) -> None:
    content = 'id,text\r\n1,"a, b"\r\n2,"line one\nline two, ""quoted"""\r\n3,plain\r\n'
    frame, _ = read_all(write(tmp_path / "q.csv", content))
    assert rows_of(frame) == [
        ["1", "a, b"], ["2", 'line one\nline two, "quoted"'], ["3", "plain"],
    ]
    assert frame.index.tolist() == [1, 2, 3]


def test_last_line_without_a_newline(tmp_path) -> None:
    frame, _ = read_all(write(tmp_path / "q.csv", 'id,text\n1,a\n2,"b\nc"'))
    assert rows_of(frame) == [["1", "a"], ["2", "b\nc"]]


def test_a_hand_made_format_is_completed_by_detection(tmp_path) -> None:
    path = write(tmp_path / "q.csv", "id;text\n1;a\n", "utf-16")
    frame = pd.concat(iter_table(path, TableFormat("csv")))
    assert rows_of(frame) == [["1", "a"]]


# -- shape of what comes out ----------------------------------------------------------------


def test_cells_are_str_and_names_are_clean_and_unique(tmp_path) -> None:
    path = write(tmp_path / "q.csv", " text ,text,,id, text.1\n a ,,x,1,y\n")
    frame, _ = read_all(path)
    assert list(frame.columns) == ["text", "text.1", "column_3", "id", "text.1.1"]
    assert read_columns(path, detect_format(path)) == list(frame.columns)
    assert rows_of(frame) == [[" a ", "", "x", "1", "y"]]
    assert all(pd.api.types.is_string_dtype(dtype) for dtype in frame.dtypes)


def test_chunks_number_rows_across_boundaries(tmp_path) -> None:
    path = write(tmp_path / "q.csv", "id\n" + "".join(f"{i}\n" for i in range(1, 11)))
    report = ReadReport()
    chunks = list(iter_table(path, detect_format(path), chunk_rows=3, report=report))
    assert [c.index.tolist() for c in chunks] == [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10]]
    assert [c["id"].tolist() for c in chunks][-1] == ["10"]
    assert report.rows_read == 10


def test_blank_lines_are_skipped_but_keep_their_numbers(tmp_path) -> None:
    frame, report = read_all(write(tmp_path / "q.csv", "\nid,text\n1,a\n\n,\n2,b\n"))
    assert frame.index.tolist() == [1, 4]
    assert rows_of(frame) == [["1", "a"], ["2", "b"]]
    assert report.rows_read == 2


def test_a_large_csv_is_streamed_in_chunks(tmp_path) -> None:
    lines = "".join(f"{i},question number {i}\n" for i in range(1, 200_001))
    path = write(tmp_path / "big.csv", "id,question\n" + lines)
    report = ReadReport()
    sizes, bounds = [], []
    for chunk in iter_table(path, detect_format(path), chunk_rows=50_000, report=report):
        sizes.append(len(chunk))
        bounds.append((chunk.index[0], chunk.index[-1], chunk["id"].iloc[-1]))
    assert sizes == [50_000] * 4
    assert bounds[-1] == (150_001, 200_000, "200000")
    assert report.rows_read == 200_000


def test_a_cell_of_several_megabytes_is_read_whole(tmp_path) -> None:
    huge = "x" * 5_000_000 + "é"
    frame, _ = read_all(write(tmp_path / "q.csv", f'id,text\n1,"{huge}"\n2,short\n'))
    assert frame.loc[1, "text"] == huge
    assert frame.loc[2, "text"] == "short"
    jsonl = write(tmp_path / "q.jsonl", json.dumps({"id": 1, "text": huge}) + "\n")
    assert read_all(jsonl)[0].loc[1, "text"] == huge


def test_utf8_cut_by_the_detection_sample_is_still_utf8(tmp_path) -> None:
    head = "text\n" + "x" * (SAMPLE_BYTES - 6)  # "é" then starts on the sample's last byte
    path = write(tmp_path / "q.csv", head + "é\n")
    assert detect_format(path).encoding == "utf-8"
    assert read_all(path)[0].loc[1, "text"].endswith("xé")


def test_preview_shows_the_first_rows(tmp_path) -> None:
    path = write(tmp_path / "q.csv", "id,text\n" + "".join(f"{i},t{i}\n" for i in range(50)))
    preview = preview_table(path, n=3)
    assert preview.format == TableFormat("csv", encoding="utf-8", delimiter=",", quoting=True)
    assert preview.columns == ["id", "text"]
    assert preview.rows == [["0", "t0"], ["1", "t1"], ["2", "t2"]]
    assert preview.sheets == []


# -- Excel, Parquet, JSON Lines -------------------------------------------------------------


def test_xlsx_first_sheet_by_default_and_second_on_request(tmp_path) -> None:
    path = workbook(tmp_path / "q.xlsx", {
        "First": [["id", "text"], [1, "one"]],
        "Second": [["key", "question", None], [7, "seven", None], [None, None],
                   [8.5, None, "note"]],
    })
    assert detect_format(path) == TableFormat("xlsx", sheet="First")
    fmt = detect_format(path, sheet="Second")
    assert read_columns(path, fmt) == ["key", "question"]
    frame, _ = read_all(path, sheet="Second")
    assert frame.index.tolist() == [1, 3]
    assert rows_of(frame) == [["7", "seven"], ["8.5", ""]]
    preview = preview_table(path, sheet="Second")
    assert preview.sheets == ["First", "Second"]
    assert preview.rows == rows_of(frame)


def test_xlsx_without_the_sheet_lists_the_sheets(tmp_path) -> None:
    path = workbook(tmp_path / "q.xlsx", {"A": [["x"]], "B b": [["y"]]})
    with pytest.raises(InputError, match=r'q\.xlsx: no sheet "C"; sheets are: A, B b'):
        detect_format(path, sheet="C")


def test_xlsx_empty_sheet_and_header_only_sheet(tmp_path) -> None:
    path = workbook(tmp_path / "q.xlsx", {"Empty": [], "Header": [["id", "text"]]})
    with pytest.raises(InputError, match=r"q\.xlsx: sheet 'Empty' is empty"):
        read_columns(path, detect_format(path))
    with pytest.raises(InputError, match=r"q\.xlsx: the file has no data rows"):
        read_all(path, sheet="Header")


@pytest.mark.parametrize("content", [b"not a zip at all", b"PK\x05\x06" + b"\x00" * 18])
def test_invalid_xlsx(tmp_path, content) -> None:
    path = write(tmp_path / "q.xlsx", content)
    with pytest.raises(InputError, match=r"q\.xlsx: is not a valid \.xlsx workbook"):
        detect_format(path)


def test_parquet(tmp_path) -> None:
    path = tmp_path / "q.parquet"
    pd.DataFrame({
        "id": [1, 2, 3], "text": ["a", None, "c"], "score": [0.5, float("nan"), 2.0],
    }).to_parquet(path, index=False)
    assert detect_format(path) == TableFormat("parquet")
    chunks = list(iter_table(path, detect_format(path), chunk_rows=2))
    assert [c.index.tolist() for c in chunks] == [[1, 2], [3]]
    assert rows_of(pd.concat(chunks)) == [["1", "a", "0.5"], ["2", "", ""], ["3", "c", "2"]]
    assert read_columns(path, TableFormat("parquet")) == ["id", "text", "score"]


def test_corrupt_parquet(tmp_path) -> None:
    path = write(tmp_path / "q.parquet", b"PAR1" + b"junk" * 50 + b"PAR1")
    with pytest.raises(InputError, match=r"q\.parquet: is not a valid Parquet file"):
        detect_format(path)


def test_jsonl(tmp_path) -> None:
    lines = [
        {"id": 1, "text": "a", "tags": ["x", "y"]},
        "",
        {"id": 2, "text": None, "extra": True},
        "not json",
        [1, 2],
        {"id": 3.5, "text": "c"},
    ]
    content = "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n"
    frame, report = read_all(write(tmp_path / "q.ndjson", content))
    assert list(frame.columns) == ["id", "text", "tags", "extra"]
    assert frame.index.tolist() == [1, 3, 6]
    assert rows_of(frame) == [
        ["1", "a", '["x", "y"]', ""], ["2", "", "", "true"], ["3.5", "c", "", ""],
    ]
    assert report.bad_lines == [4, 5]


def test_a_json_document_is_not_json_lines(tmp_path) -> None:
    path = write(tmp_path / "q.jsonl", '{\n  "id": 1\n}\n')
    with pytest.raises(InputError, match=r"q\.jsonl: is not JSON Lines"):
        read_columns(path, detect_format(path))


# -- files that cannot be read --------------------------------------------------------------


def test_missing_file_and_folder(tmp_path) -> None:
    with pytest.raises(InputError, match=r"nope\.csv: cannot read \(No such file"):
        detect_format(tmp_path / "nope.csv")
    (tmp_path / "dir.xlsx").mkdir()
    with pytest.raises(InputError, match=r"dir\.xlsx: cannot read \(it is a folder\)"):
        detect_format(tmp_path / "dir.xlsx")


def test_unreadable_file(tmp_path, monkeypatch) -> None:
    path = write(tmp_path / "locked.parquet", b"PAR1")
    real_open = Path.open

    def refuse(self: Path, *args, **kwargs):
        if self == path:
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refuse)
    with pytest.raises(InputError, match=r"locked\.parquet: cannot read \(Permission denied\)"):
        detect_format(path)


@pytest.mark.unprivileged
@pytest.mark.skipif(os.name != "posix", reason="chmod 0 is POSIX's")
def test_unreadable_file_on_disk(tmp_path) -> None:
    needs_unprivileged_user()
    path = write(tmp_path / "locked.csv", "a\n1\n")
    path.chmod(0)
    with pytest.raises(InputError, match=r"locked\.csv: cannot read"):
        detect_format(path)


def test_unsupported_extension(tmp_path) -> None:
    with pytest.raises(InputError, match=r"q\.xls: unsupported file type; use one of: \.csv"):
        detect_format(write(tmp_path / "q.xls", b"x"))


@pytest.mark.parametrize("content", [b"", b"\n\n  \r\n", "\ufeff".encode()])
def test_empty_file(tmp_path, content) -> None:
    with pytest.raises(InputError, match=r"q\.csv: the file is empty"):
        detect_format(write(tmp_path / "q.csv", content))


def test_header_only_file_has_columns_but_no_data_rows(tmp_path) -> None:
    path = write(tmp_path / "q.csv", "id,text\n")
    fmt = detect_format(path)
    assert read_columns(path, fmt) == ["id", "text"]
    with pytest.raises(InputError, match=r"q\.csv: the file has no data rows$"):
        list(iter_table(path, fmt))
    with pytest.raises(InputError, match="no data rows"):
        preview_table(path)


@pytest.mark.parametrize(
    ("content", "looks_like"),
    [
        (bytes(range(256)) * 8, "binary data"),
        (b"\x89PNG\r\n\x1a\n" + bytes(100), "a PNG image"),
        (b"PK\x03\x04" + bytes(range(256)), "a ZIP archive"),
    ],
)
def test_binary_file_named_csv(tmp_path, content, looks_like) -> None:
    path = write(tmp_path / "q.csv", content)
    with pytest.raises(InputError, match=rf"q\.csv: is not a text table \(it .*{looks_like}"):
        detect_format(path)


def test_ragged_rows_are_skipped_or_padded(tmp_path) -> None:
    content = (
        "id,text,lang\n"
        "1,a,b,EXTRA\n"          # line 2: first data row wider than the header
        '2,"two\nlines",en\n'    # lines 3-4
        "3,c,d,e\n"              # line 5
        "4,short\n"              # line 6: padded
        "5,trailing,comma,\n"    # line 7: only an empty extra field
    )
    frame, report = read_all(write(tmp_path / "q.csv", content))
    assert report.bad_lines == [2, 5]
    assert frame.index.tolist() == [2, 4, 5]
    assert rows_of(frame) == [
        ["2", "two\nlines", "en"], ["4", "short", ""], ["5", "trailing", "comma"],
    ]
    assert report.rows_read == 3


def test_only_malformed_rows_means_no_data(tmp_path) -> None:
    path = write(tmp_path / "q.csv", "a,b\n1,2,3\n4,5,6\n")
    with pytest.raises(InputError, match=r"no data rows \(2 malformed rows skipped\)"):
        read_all(path)


def test_an_unclosed_quote_names_its_line(tmp_path) -> None:
    path = write(tmp_path / "q.csv", 'id,text\n1,ok\n2,"never closed\n3,more\n4,rows\n')
    with pytest.raises(InputError, match=r"q\.csv: line 3: a quote opened here is never closed"):
        read_all(path)


def test_stray_quotes_inside_fields_are_kept(tmp_path) -> None:
    # '"a"b' is not a quoted field: the file never quotes, so quotes are plain characters.
    frame, report = read_all(write(tmp_path / "q.csv", 'id,text\n1,5" screen\n2,"a"b\n'))
    assert rows_of(frame) == [["1", '5" screen'], ["2", '"a"b']]
    assert report.bad_lines == []


def test_decoding_error_after_the_sample_suggests_an_encoding(tmp_path) -> None:
    body = "".join(f"{i},some plain question text\n" for i in range(SAMPLE_BYTES // 20))
    path = write(tmp_path / "q.csv", ("id,text\n" + body).encode() + b"9,caf\xe9\n")
    fmt = detect_format(path)
    assert fmt.encoding == "utf-8"
    with pytest.raises(InputError, match=r"q\.csv: text after line \d+ is not valid utf-8; .*"
                                          r"--encoding cp1252"):
        list(iter_table(path, fmt))


def test_require_columns(tmp_path) -> None:
    require_columns(tmp_path / "q.csv", ["id", "question"], ["question"])
    with pytest.raises(InputError) as caught:
        require_columns(tmp_path / "questions.csv", ["id", "question", "answer"], ["titel"])
    assert str(caught.value) == (
        'questions.csv: no column "titel"; columns are: id, question, answer')
    with pytest.raises(InputError, match=r'no columns "a", "b"; columns are: id$'):
        require_columns("q.csv", ["id"], ["id", "a", "b"])


def test_tsv_that_never_quotes_keeps_leading_quotes(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text('score\tsentence1\tsentence2\n'
                    '4.0\t"The Hobbit" is a novel.\tTolkien wrote "The Hobbit".\n'
                    '1.0\tA cat sleeps.\tA "dog" barks loudly.\n'
                    '2.0\tRain falls.\tIt is raining.\n', encoding="utf-8")
    fmt = detect_format(path)
    assert fmt.quoting is False
    frame = next(iter_table(path, fmt))
    assert frame["sentence1"].tolist()[0] == '"The Hobbit" is a novel.'
    assert frame["sentence2"].tolist()[1] == 'A "dog" barks loudly.'


def test_quoted_csv_keeps_quoting(tmp_path):
    path = tmp_path / "quoted.csv"
    path.write_text('id,text\n1,"Hello, world"\n2,"He said ""hi"""\n3,plain\n', encoding="utf-8")
    fmt = detect_format(path)
    assert fmt.quoting is True
    frame = next(iter_table(path, fmt))
    assert frame["text"].tolist() == ["Hello, world", 'He said "hi"', "plain"]


def test_tab_separated_questions_full_of_commas_are_split_on_tabs(tmp_path):
    path = tmp_path / "pairs.txt"
    rows = ["qid1\tqid2\tquestion1\tquestion2\tis_duplicate"] + [
        f"{i}\t{i + 1}\tWhat, if anything, is {i}?\tHow, exactly, does {i} work, then?\t0"
        for i in range(30)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    fmt = detect_format(path)
    assert fmt.delimiter == "\t"
    assert read_columns(path, fmt) == ["qid1", "qid2", "question1", "question2", "is_duplicate"]


def test_chunks_of_big_rows_end_at_a_character_budget(tmp_path) -> None:
    """Rows near the row cap come a few to a chunk, whatever chunk_rows says."""
    from engine.io.limits import CHUNK_CHARS

    cell = "y" * (CHUNK_CHARS // 4 + 1)
    path = write(tmp_path / "docs.csv", "text\n" + "".join(f"{cell}\n" for _ in range(5)))
    sizes = [len(chunk) for chunk in iter_table(path, detect_format(path), chunk_rows=100)]
    assert sizes == [4, 1]
