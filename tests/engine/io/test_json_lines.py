"""JSON Lines the json module cannot take, and values of every JSON type."""

from __future__ import annotations

import json

from engine.io import detect_format, read_columns
from tests.engine.io.importing import import_or_refuse, refusal, stored_rows

DEEP = 100_000


def write_lines(path, *lines: str):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def test_a_record_nested_100000_deep_is_a_skipped_line(store, tmp_path) -> None:
    """json recurses once per level and raises RecursionError (not a JSONDecodeError)."""
    deep_array = '{"text": "deep", "v": ' + "[" * DEEP + "]" * DEEP + "}"
    deep_object = '{"text": "deeper", "v": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}"
    path = write_lines(tmp_path / "deep.jsonl", '{"text": "first"}', deep_array,
                       deep_object, '{"text": "last"}')
    report = import_or_refuse(store, path, columns=["text"])
    assert report.bad_lines == [2, 3]
    assert [text for _, text, _ in stored_rows(store, report.source_id)] == ["first", "last"]


def test_a_file_of_nothing_but_deep_nesting_is_not_json_lines(store, tmp_path) -> None:
    path = write_lines(tmp_path / "deep.jsonl", "[" * DEEP + "]" * DEEP)
    assert refusal(store, path) == ("deep.jsonl: is not JSON Lines (no line holds a JSON "
                                    "object)")


def test_malformed_lines_are_skipped_and_named(store, tmp_path) -> None:
    path = write_lines(
        tmp_path / "bad.jsonl",
        '{"text": "ok", "n": 1}',
        '{"text": "huge", "n": ' + "9" * 5000 + "}",   # past Python's 4,300-digit limit
        '["an", "array"]',
        '"a string"',
        '{"text": "trailing"} garbage',
        '{"text": "unclosed"',
        "",                                               # blank: neither row nor error
        '{"text": "nan", "n": NaN}',                       # json takes NaN
        '{"text": "dup", "text": "second wins"}',
    )
    report = import_or_refuse(store, path, columns=["text"])
    assert report.bad_lines == [2, 3, 4, 5, 6]
    stored = stored_rows(store, report.source_id)
    assert [(row, text, extra["n"]) for row, text, extra in stored] == [
        (1, "ok", "1"), (8, "nan", "NaN"), (9, "second wins", "")]


def test_values_of_every_type_become_text(store, tmp_path) -> None:
    record = {"text": "x", "int": 8123, "zero_led": "08123", "float": 1.5, "bool": True,
              "null": None, "list": [1, "two", None], "object": {"a": {"b": [1]}},
              "nul": "a\u0000b", "surrogate": "a\ud800b", "emoji": "😀"}
    path = write_lines(tmp_path / "types.jsonl", json.dumps(record))
    assert read_columns(path, detect_format(path)) == list(record)
    report = import_or_refuse(store, path, columns=["text"])
    [(_, _, extra)] = stored_rows(store, report.source_id)
    assert extra == {"text": "x", "int": "8123", "zero_led": "08123", "float": "1.5",
                     "bool": "true", "null": "", "list": '[1, "two", null]',
                     "object": '{"a": {"b": [1]}}', "nul": "a\u0000b",
                     "surrogate": "a\ufffdb", "emoji": "😀"}


def test_a_key_with_a_lone_surrogate_is_a_storable_column(store, tmp_path) -> None:
    path = write_lines(tmp_path / "keys.jsonl", '{"text": "x", "k\\udc80": "v"}')
    assert read_columns(path, detect_format(path)) == ["text", "k\ufffd"]
    report = import_or_refuse(store, path, columns=["text"])
    assert report.rows_imported == 1
