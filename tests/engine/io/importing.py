"""Helpers for the hostile-file and fuzz tests: a real import into a real project store,
and the one rule every outcome must follow (rows stored, or one clear InputError)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy import select

from engine.errors import InputError
from engine.importer import ImportReport, import_table
from engine.io import detect_format, read_columns
from engine.store.database import Store
from engine.store.schema import items

# Few examples each, so the suite stays fast; the example database is off so that no
# .hypothesis folder appears beside the sources.
FUZZ = settings(max_examples=60, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@contextlib.contextmanager
def scratch() -> Iterator[Path]:
    """A folder per example (pytest's tmp_path is one per test, shared by every example)."""
    folder = Path(tempfile.mkdtemp(prefix="duplens-fuzz-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def import_rows(store: Store, path: Path, columns: list[str] | None = None,
                **options) -> ImportReport:
    """Import `path` rows-only, as `duplens import --no-encode` does; `columns=None` takes
    the file's first column as the text column."""
    if columns is None:
        columns = read_columns(path, detect_format(path, **_detect_options(options)))[:1]
    return import_table(store, path, columns, **options)


def _detect_options(options: dict) -> dict:
    return {k: v for k, v in options.items() if k in ("sheet", "encoding", "delimiter",
                                                      "quoting")}


def stored_rows(store: Store, source_id: int) -> list[tuple[int, str, dict]]:
    """(row number, text, all cells by column) of a source, in file order."""
    with store.read() as conn:
        return [tuple(r) for r in conn.execute(
            select(items.c.row, items.c.text, items.c.extra)
            .where(items.c.source_id == source_id).order_by(items.c.row))]


def assert_clear_error(err: InputError, path: Path) -> None:
    """A user's error: one line, starting with the file's name."""
    message = str(err)
    assert message.startswith(f"{path.name}: "), message
    assert "\n" not in message and "\r" not in message, message
    assert len(message) < 600, message


def import_or_refuse(store: Store, path: Path, **options) -> ImportReport | None:
    """The rule of every hostile-file test: the import succeeds, or it raises exactly one
    clear InputError (any other exception fails the test). Returns the report or None."""
    try:
        report = import_rows(store, path, **options)
    except InputError as err:
        assert_clear_error(err, path)
        return None
    if not report.already_imported:
        assert report.rows_imported + report.rows_empty == report.rows_read
        assert len(stored_rows(store, report.source_id)) == report.rows_imported
    return report



def refusal(store: Store, path: Path, **options) -> str:
    """The message of the one clear InputError importing `path` must end in."""
    with pytest.raises(InputError) as caught:
        import_rows(store, path, **options)
    assert_clear_error(caught.value, path)
    return str(caught.value)
