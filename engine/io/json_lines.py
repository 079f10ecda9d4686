"""JSON Lines (.jsonl, .ndjson): one JSON object per line, its keys the columns.

A line that holds no object is skipped and its number reported, like a ragged CSV row.
That includes lines the json module cannot take although they are JSON: values nested
deeper than its recursion limit (about 1,000 levels) and integers longer than Python's
4,300-digit limit; both raise something other than JSONDecodeError.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from pathlib import Path

from engine.errors import InputError
from engine.io.records import ReadReport, Rows, TableFormat, storable
from engine.io.text_lines import text_lines

_JSONL_KEY_SCAN = 1000  # JSON Lines records whose keys make up the columns


def jsonl_keys(path: Path, fmt: TableFormat) -> list[str]:
    """Keys of the first records, in order of appearance; later new keys are ignored, as
    the columns must be known before the first chunk is handed out."""
    keys: dict[str, None] = {}
    with text_lines(path, fmt) as lines:
        for _, record in itertools.islice(_json_objects(lines), _JSONL_KEY_SCAN):
            keys.update(dict.fromkeys(record or {}))
    if not keys:
        raise InputError(f"{path.name}: is not JSON Lines (no line holds a JSON object)")
    return list(keys)


def jsonl_records(path: Path, fmt: TableFormat, keys: list[str], report: ReadReport) -> Rows:
    """Records as rows numbered by line; a line that is not a JSON object is skipped."""
    with text_lines(path, fmt) as lines:
        for number, record in _json_objects(lines):
            cells = None if record is None else _cells(record, keys)
            if cells is None:
                report.bad_lines.append(number)
                continue
            yield number, cells


def _json_objects(lines: Iterable[str]) -> Iterator[tuple[int, dict[str, object] | None]]:
    """Each non-blank line's number and its JSON object, or None when it holds none."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):  # JSONDecodeError is a ValueError
            value = None
        yield number, value if isinstance(value, dict) else None


def _cells(record: dict[str, object], keys: list[str]) -> list[str] | None:
    """The record's values in column order, or None when one cannot be written back out:
    a value parsed just within the recursion limit may be dumped from a deeper stack."""
    try:
        return [_json_text(record.get(key)) for key in keys]
    except RecursionError:
        return None


def _json_text(value: object) -> str:
    """Strings as they are; numbers, booleans and nested values as JSON text."""
    if value is None:
        return ""
    if isinstance(value, str):
        return storable(value)
    return storable(json.dumps(value, ensure_ascii=False))
