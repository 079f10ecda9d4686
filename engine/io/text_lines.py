"""Lines of a text table (CSV or JSON Lines), counted, decoded and bounded.

Reading by lines is what lets any text file stream; what a plain `for line in file` does not
do is bound a line: a 3 GB file without a newline would be one 3 GB string. Here a record
(one line, or for CSV all the lines of a row with quoted newlines) may hold at most
`MAX_ROW_CHARS` characters, and decoding errors and NUL bytes are reported by line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from engine.errors import InputError
from engine.io.limits import MAX_ROW_CHARS
from engine.io.records import TableFormat, cannot_read


@contextlib.contextmanager
def text_lines(path: Path, fmt: TableFormat, *, max_row_chars: int = MAX_ROW_CHARS,
               multiline: bool = False) -> Iterator[Lines]:
    """The file's lines; `multiline`: a record spans lines until `Lines.new_record()`."""
    try:
        handle = path.open(encoding=fmt.encoding, newline="")
    except OSError as err:
        raise cannot_read(path, err) from err
    with handle:
        yield Lines(path, fmt, handle, max_row_chars, multiline)


class Lines:
    """Lines of a text file, counted, with decoding errors reported by line.

    It also notes when the file ran out: csv.reader quietly closes a quoted field at the end
    of the file, so a record that comes back after that means a quote was never closed.
    """

    def __init__(self, path: Path, fmt: TableFormat, handle: TextIO, max_row_chars: int,
                 multiline: bool) -> None:
        self._path, self._encoding, self._handle = path, fmt.encoding, handle
        self._max, self._multiline = max_row_chars, multiline
        self._left = max_row_chars  # characters the current record may still take
        self._record_start = 1
        self.count = 0
        self.exhausted = False

    def __iter__(self) -> Lines:
        return self

    def new_record(self) -> None:
        """The next line starts a record: its budget of characters starts afresh."""
        self._left, self._record_start = self._max, self.count + 1

    def __next__(self) -> str:
        if not self._multiline:
            self.new_record()
        try:
            # One more than the budget, so a line that does not fit shows itself without
            # the rest of it (perhaps gigabytes) ever being read.
            line = self._handle.readline(self._left + 1)
        except UnicodeError as err:
            other = "latin-1" if self._encoding == "cp1252" else "cp1252"
            raise InputError(
                f"{self._path.name}: text after line {self.count} is not valid"
                f" {self._encoding}; name the file's encoding (e.g. --encoding {other})"
            ) from err
        if not line:
            self.exhausted = True
            raise StopIteration
        self.count += 1
        self._left -= len(line)
        if self._left < 0:
            raise InputError(
                f"{self._path.name}: line {self._record_start}: a row longer than"
                f" {self._max:,} characters (a quote that is never closed?); Duplens reads"
                f" rows of up to {self._max:,} characters"
            )
        if "\x00" in line:
            raise InputError(
                f"{self._path.name}: line {self.count} contains a NUL byte, which no text"
                f" table holds (binary data, or UTF-16 text read as {self._encoding}?)"
            )
        return line
