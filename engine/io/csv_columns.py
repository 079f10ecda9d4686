"""CSV text for whole columns at once, byte for byte what the csv module writes.

A million-row export spends most of its time turning cells into CSV one Python call at a
time. Here a page of rows is a few Arrow arrays, and neutralising, quoting and joining them
into lines runs inside Arrow's compute kernels (C++, no Python per cell). Arrow's own CSV
writer is not used: its "needed" quoting puts every string in quotes, where the csv
module's excel dialect (`engine.io.writers`) quotes only a field holding a separator, a
quote or a line break, and exports must not change byte for byte with the path taken
(tests/engine/services/test_export_lines.py checks it on hostile cells).

The rules, as Python 3.11's `csv.writer` (excel dialect, QUOTE_MINIMAL) applies them to a
string: a field containing `,`, `"`, CR or LF is put in double quotes with its quotes
doubled; every other field is written as it is; a missing value (None) is empty. Lines
end in CRLF. Formula neutralising (`writers.neutralise_cell`) comes first, as there.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.io.writers import neutralise_cell

# What makes the csv module quote a field (excel dialect: its separator, its quote
# character and the characters of its "\r\n" line terminator).
_NEEDS_QUOTES = '[,"\r\n]'
_QUOTE_CHARS = (",", '"', "\r", "\n")
# `writers._FORMULA_STARTS` as a pattern (RE2, anchored at the cell's start).
_FORMULA_START = "^[=+\\-@\t\r]"
EOL = "\r\n"


def csv_field(value: object) -> str:
    """One cell as the csv module writes it: neutralised, then `str` (None: empty), then
    quoted if it holds a separator, a quote or a line break. For the few cells computed in
    Python (the review's columns), so they need not go through Arrow one by one."""
    value = neutralise_cell(value)
    text = "" if value is None else value if isinstance(value, str) else str(value)
    if any(c in text for c in _QUOTE_CHARS):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_text_fields(column: pa.Array) -> pa.Array:
    """A string column's cells as CSV fields (nulls empty), as `csv_field` would make each.

    Only the cells that need a change are touched (`replace_with_mask` on the few that
    start like a formula or hold a quote character), so the usual plain column costs two
    scans."""
    column = _neutralised(column)
    quote = pc.fill_null(pc.match_substring_regex(column, _NEEDS_QUOTES), False)
    if pc.any(quote).as_py():
        inner = pc.replace_substring(pc.filter(column, quote), '"', '""')
        column = pc.replace_with_mask(column, quote,
                                      pc.binary_join_element_wise('"', inner, '"', ""))
    return pc.fill_null(column, "")


def _neutralised(column: pa.Array) -> pa.Array:
    formula = pc.fill_null(pc.match_substring_regex(column, _FORMULA_START), False)
    if not pc.any(formula).as_py():
        return column
    prefixed = pc.binary_join_element_wise("'", pc.filter(column, formula), "")
    return pc.replace_with_mask(column, formula, prefixed)


def csv_lines(fields: Sequence[pa.Array]) -> memoryview:
    """Fields (one array per column, already `csv_text_fields`, no nulls) joined into CSV
    lines: the page's bytes, ready to write."""
    joined = fields[0] if len(fields) == 1 else pc.binary_join_element_wise(*fields, ",")
    return _values_buffer(pc.binary_join_element_wise(joined, pa.scalar(EOL), ""))


def _values_buffer(strings: pa.Array) -> memoryview:
    """The concatenated bytes of a string array's values, without copying them."""
    if len(strings) == 0:
        return memoryview(b"")
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(strings.buffers()[1], dtype=width)
    start, end = offsets[strings.offset], offsets[strings.offset + len(strings)]
    return memoryview(strings.buffers()[2])[start:end]
